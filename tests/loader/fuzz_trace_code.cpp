// libFuzzer target: what `arcprof trace` reads of a traced program's file:
// its function symbols (ReadCodeModule) and the machine code of each
// function (DecodeFunction), as the probes are placed from them.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loader/trace_code.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> copy(data, data + size);  // exact-size heap buffer for ASan
  (void)arcprof::DecodeFunction(copy, 0x401000);
  const int fd = memfd_create("fuzz_trace_code", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (write(fd, data, size) == static_cast<ssize_t>(size)) {
    auto module = arcprof::ReadCodeModule("/proc/self/fd/" + std::to_string(fd));
    if (module) {
      (void)arcprof::FindFunctions(*module, "main");
      size_t decoded = 0;
      for (const arcprof::CodeFunction& f : module->functions) {
        if (++decoded > 64) break;
        auto code = module->Read(f.start, f.end - f.start);
        if (code) (void)arcprof::DecodeFunction(*code, f.start);
      }
    }
  }
  close(fd);
  return 0;
}
