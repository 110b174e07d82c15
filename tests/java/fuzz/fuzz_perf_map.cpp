// libFuzzer target: the perf-map parser, split into two reads as when tailing
// a growing file, feeding the index.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "symbolize/jit_index.h"
#include "symbolize/perf_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace arcprof;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  std::vector<perfmap::Entry> entries;
  auto p = perfmap::ParseLines(in.substr(0, cut), false, &entries);
  perfmap::ParseLines(in.substr(p.consumed), true, &entries);
  JitCodeIndex index;
  uint64_t t = 0;
  for (const auto& e : entries) index.AddCode(t++, e.start, e.size, e.name);
  for (const auto& e : entries) index.Find(e.start + e.size / 2, t / 2);
  return 0;
}
