// libFuzzer target: /proc/PID/cgroup text, one cgroup path and an environment
// (symbolize/cgroup_parse.h). Checks the contract: every field bounded and
// free of control characters.
#include <cstddef>
#include <cstdint>
#include <string>

#include "spaces/cgroup_parse.h"

namespace {

void CheckField(const std::string& field, size_t max) {
  if (field.size() > 4 * max) __builtin_trap();
  for (unsigned char c : field) {
    if (c < 0x20 || c == 0x7f) __builtin_trap();
  }
}

void Check(const arcprof::procfs::CgroupIdentity& c) {
  using arcprof::procfs::kCgroupFieldMax;
  for (const std::string* f : {&c.container_id, &c.container_runtime, &c.pod_uid, &c.qos_class, &c.unit}) {
    CheckField(*f, kCgroupFieldMax);
  }
  CheckField(c.cgroup, arcprof::procfs::kCgroupPathMax);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string copy(reinterpret_cast<const char*>(data), size);  // exact-size heap buffer for ASan
  Check(arcprof::procfs::ParseProcCgroup(copy));
  Check(arcprof::procfs::ParseCgroupPath(copy));
  CheckField(arcprof::procfs::EnvironValue(copy, "OTEL_SERVICE_NAME"), arcprof::procfs::kCgroupFieldMax);
  return 0;
}
