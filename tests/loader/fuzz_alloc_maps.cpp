// libFuzzer: what --alloc reads of a process's /proc/PID/maps (its libc),
// which the process controls through its mappings.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "loader/alloc_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view maps(reinterpret_cast<const char*>(data), size);
  (void)arcprof::LibcMappingOf(maps);
  return 0;
}
