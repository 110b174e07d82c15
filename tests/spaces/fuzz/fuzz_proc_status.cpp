// libFuzzer target: /proc/PID/status, stat, cmdline and comm contents.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "spaces/proc_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)arcprof::procfs::ParseStatus(text);
  (void)arcprof::procfs::ParseStatStartTicks(text);
  std::string cmdline = arcprof::procfs::ParseCmdline(text);
  if (cmdline.size() > size || cmdline.find('\0') != std::string::npos) __builtin_trap();
  (void)arcprof::procfs::ParseComm(text);
  return 0;
}
