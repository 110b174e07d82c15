// Fuzzes the decoders of V8's position tables (runtimes/node/v8_tables.h),
// which read bytes out of a node process that is not trusted. The first
// byte picks the table: 0 a source position table (then looked up at a few
// offsets and its positions split), 1 a baseline offset table with its
// bytecodes and bytecode sizes (two length bytes first, then a 2-byte pc
// offset), 2 inlining positions (then the chain of a position).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "runtimes/node/v8_tables.h"

using namespace arcprof::runtimes;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 3;
  std::span<const uint8_t> rest(data + 1, size - 1);
  if (mode == 0) {
    std::vector<V8Position> table;
    if (DecodeSourcePositions(rest, 4096, table)) {
      if (table.size() > 4096) abort();
      for (size_t i = 1; i < table.size(); ++i) {
        if (table[i].code_offset < table[i - 1].code_offset) abort();
      }
      for (int64_t at : {-1LL, 0LL, 1LL, 17LL, 1000LL, 1LL << 40}) {
        if (auto pos = PositionAt(table, at)) {
          if (ScriptOffsetOf(*pos) < -1 || InliningIdOf(*pos) < -1) abort();
        }
      }
    }
    return 0;
  }
  if (mode == 1) {
    if (rest.size() < 4) return 0;
    const size_t n_table = rest[0], n_code = rest[1];
    const uint32_t pc = static_cast<uint32_t>(rest[2]) | static_cast<uint32_t>(rest[3]) << 8;
    rest = rest.subspan(4);
    const auto table = rest.subspan(0, std::min(n_table, rest.size()));
    rest = rest.subspan(table.size());
    const auto code = rest.subspan(0, std::min(n_code, rest.size()));
    rest = rest.subspan(code.size());
    const auto sizes = rest.subspan(0, rest.size() - rest.size() % 3);
    if (auto bc = BaselineBytecodeOffset(table, code, sizes, pc, 1 << 12)) {
      if (*bc < -1 || (*bc >= 0 && static_cast<size_t>(*bc) >= code.size())) abort();
    }
    return 0;
  }
  std::vector<V8Inlining> inlinings;
  const size_t whole = rest.size() - rest.size() % kV8InliningPositionSize;
  if (!DecodeInliningPositions(rest.subspan(0, whole), 1024, inlinings)) return 0;
  std::vector<V8InlinedFrame> chain;
  for (const V8Inlining& in : inlinings) {
    if (InliningChain(in.position, inlinings, 16, chain) && (chain.empty() || chain.size() > 16)) abort();
  }
  int64_t last = 0;
  if (rest.size() >= 8) std::memcpy(&last, rest.data() + rest.size() - 8, 8);
  if (InliningChain(last, inlinings, 16, chain) && (chain.empty() || chain.size() > 16)) abort();
  return 0;
}
