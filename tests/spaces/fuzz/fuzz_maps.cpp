// libFuzzer target: /proc/PID/maps text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "spaces/proc_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t malformed = 0;
  for (const auto& e : arcprof::procfs::ParseMaps(text, &malformed)) {
    if (e.end < e.start) __builtin_trap();  // the parser promises ordered ranges
  }
  (void)arcprof::procfs::ParseMapsLine(text);
  return 0;
}
