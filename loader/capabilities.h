// Whether this process holds a capability in its effective set (root holds
// them all). `record` and `continuous` check the ones they need before
// sampling starts, so a missing one is one clear line, not a BPF error.
#pragma once

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace arcprof {

inline bool HasEffectiveCap(int cap) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[cap / 32].effective >> (cap % 32)) & 1u;
}

}  // namespace arcprof
