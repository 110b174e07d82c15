// CLOCK_MONOTONIC in nanoseconds: the clock of BPF's bpf_ktime_get_ns, of
// perf samples (attr.clockid) and of jitdump records, so one reading compares
// with all of them. The one definition every layer uses.
#pragma once

#include <time.h>

#include <cstdint>

namespace arcprof {

inline uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// CPU time of the calling thread in nanoseconds (a system call, not the
// vDSO: for timing phases of a tick or a window close, not per sample).
inline uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace arcprof
