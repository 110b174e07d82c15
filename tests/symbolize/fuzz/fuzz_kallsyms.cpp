// libFuzzer target: /proc/kallsyms text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "symbolize/kallsyms.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto table = arcprof::KernelSymbols::Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!table.ok()) return 0;
  for (uint64_t addr : {uint64_t{0}, uint64_t{1}, uint64_t{0xffffffff81000000}, ~uint64_t{0}}) {
    if (const auto s = table->Find(addr)) {
      if (addr < s->start || addr >= s->end || s->name.empty()) __builtin_trap();
    }
  }
  return 0;
}
