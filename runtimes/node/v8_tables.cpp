#include "runtimes/node/v8_tables.h"

#include <algorithm>
#include <cstring>

namespace arcprof::runtimes {
namespace {

// An unsigned VLQ (src/base/vlq.h: 7 bits a byte, low first, bit 7 for
// more); false at the end of the bytes or past 64 bits.
bool ReadUnsigned(std::span<const uint8_t> bytes, size_t& at, uint64_t& out) {
  out = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (at >= bytes.size()) return false;
    const uint8_t b = bytes[at++];
    out |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// A zigzag-encoded signed VLQ.
bool ReadSigned(std::span<const uint8_t> bytes, size_t& at, int64_t& out) {
  uint64_t u = 0;
  if (!ReadUnsigned(bytes, at, u)) return false;
  out = static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
  return true;
}

// Operand-scale prefixes (src/interpreter/bytecodes.h): Wide, ExtraWide and
// their debug-break forms.
constexpr uint8_t kWide = 0, kExtraWide = 1, kDebugBreakWide = 2, kDebugBreakExtraWide = 3;

}  // namespace

bool DecodeSourcePositions(std::span<const uint8_t> table, size_t max_entries, std::vector<V8Position>& out) {
  out.clear();
  int64_t code = -1, position = 0;
  size_t at = 0;
  while (at < table.size()) {
    if (out.size() >= max_entries) return false;
    int64_t code_delta = 0, position_delta = 0;
    if (!ReadSigned(table, at, code_delta) || !ReadSigned(table, at, position_delta)) return false;
    // A statement's delta is stored as is, an expression's as -delta - 1.
    const int64_t delta = code_delta >= 0 ? code_delta : -(code_delta + 1);
    if (delta < 0 || delta > INT32_MAX || code + delta > INT32_MAX) return false;
    code += delta;
    if (__builtin_add_overflow(position, position_delta, &position)) return false;
    out.push_back({static_cast<int32_t>(code), position});
  }
  return true;
}

std::optional<int64_t> PositionAt(const std::vector<V8Position>& table, int64_t code_offset) {
  // Code offsets never go down (checked when decoded); among equal ones the
  // last is in effect.
  auto it = std::upper_bound(table.begin(), table.end(), code_offset,
                             [](int64_t off, const V8Position& e) { return off < e.code_offset; });
  if (it == table.begin()) return std::nullopt;
  return std::prev(it)->position;
}

int32_t ScriptOffsetOf(int64_t position) {
  if (position & 1) return -1;  // external (a line of another file: wasm, not JavaScript)
  return static_cast<int32_t>((static_cast<uint64_t>(position) >> 1) & ((1u << 30) - 1)) - 1;
}

int32_t InliningIdOf(int64_t position) {
  return static_cast<int32_t>((static_cast<uint64_t>(position) >> 31) & 0xffff) - 1;
}

std::optional<int32_t> BaselineBytecodeOffset(std::span<const uint8_t> offset_table,
                                              std::span<const uint8_t> bytecodes,
                                              std::span<const uint8_t> bytecode_sizes, uint32_t pc_offset,
                                              size_t max_steps) {
  if (bytecode_sizes.empty() || bytecode_sizes.size() % 3 != 0) return std::nullopt;
  const size_t count = bytecode_sizes.size() / 3;
  size_t at = 0;
  uint64_t end = 0, len = 0;
  // The prologue, before the first bytecode.
  if (!ReadUnsigned(offset_table, at, len)) return std::nullopt;
  end = len;
  int32_t current = -1;
  size_t bc = 0;
  for (size_t step = 0; end < pc_offset; ++step) {
    if (step >= max_steps || bc >= bytecodes.size()) return std::nullopt;
    if (!ReadUnsigned(offset_table, at, len) || len > UINT32_MAX) return std::nullopt;
    end += len;
    // The bytecode at bc, with its prefix.
    size_t scale = 0, prefix = 0;
    uint8_t op = bytecodes[bc];
    if (op == kWide || op == kDebugBreakWide || op == kExtraWide || op == kDebugBreakExtraWide) {
      scale = (op == kWide || op == kDebugBreakWide) ? 1 : 2;
      prefix = 1;
      if (bc + 1 >= bytecodes.size()) return std::nullopt;
      op = bytecodes[bc + 1];
    }
    if (op >= count) return std::nullopt;
    const uint8_t size = bytecode_sizes[scale * count + op];
    if (size == 0) return std::nullopt;
    current = static_cast<int32_t>(bc);
    bc += prefix + size;
  }
  return current;
}

bool DecodeInliningPositions(std::span<const uint8_t> bytes, size_t max_entries, std::vector<V8Inlining>& out) {
  out.clear();
  if (bytes.size() % kV8InliningPositionSize != 0) return false;
  const size_t n = bytes.size() / kV8InliningPositionSize;
  if (n > max_entries) return false;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    V8Inlining e;
    std::memcpy(&e.position, bytes.data() + i * kV8InliningPositionSize, 8);
    std::memcpy(&e.function, bytes.data() + i * kV8InliningPositionSize + 8, 4);
    out.push_back(e);
  }
  return true;
}

bool InliningChain(int64_t position, const std::vector<V8Inlining>& inlinings, size_t max_depth,
                   std::vector<V8InlinedFrame>& out) {
  out.clear();
  int32_t id = InliningIdOf(position);
  while (id >= 0) {
    if (static_cast<size_t>(id) >= inlinings.size() || out.size() + 1 >= max_depth) return false;
    const V8Inlining& in = inlinings[static_cast<size_t>(id)];
    if (in.function < 0) return false;
    out.push_back({in.function, ScriptOffsetOf(position)});
    position = in.position;
    const int32_t outer = InliningIdOf(position);
    if (outer >= id) return false;  // a caller's id is below its callee's
    id = outer;
  }
  out.push_back({-1, ScriptOffsetOf(position)});
  return true;
}

}  // namespace arcprof::runtimes
