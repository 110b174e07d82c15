// V8's position tables as a node process holds them (docs/node.md, "Lines"),
// decoded from bytes read out of a process that is not trusted: every decoder
// is bounded (entries, bytes, steps) and says false for what is malformed.
// Pure functions of their input (fuzzed by tests/runtimes/fuzz).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace arcprof::runtimes {

// One entry of a source position table: from `code_offset` on (a bytecode
// offset, or an offset into machine code), the code is at `position`, a raw
// V8 SourcePosition (script offset + 1 in bits 1-30, inlining id + 1 from
// bit 31; bit 0 set for an external position, which carries no offset).
struct V8Position {
  int32_t code_offset = 0;
  int64_t position = 0;
};

// Decodes a SourcePositionTable (src/codegen/source-position-table.cc:
// zigzag VLQ pairs of deltas, the code offset's sign being the statement
// flag; the first entry is relative to offset -1). False when the bytes end
// inside an entry, a value overflows, code offsets go down, or there are
// more than `max_entries` entries.
bool DecodeSourcePositions(std::span<const uint8_t> table, size_t max_entries, std::vector<V8Position>& out);

// The raw position in effect at `code_offset`: the last entry at or before
// it; nullopt before the first entry.
std::optional<int64_t> PositionAt(const std::vector<V8Position>& table, int64_t code_offset);

// The script offset of a raw position (-1: external or none) and its
// inlining id (-1: not inlined, else an index into the code's inlining
// positions).
int32_t ScriptOffsetOf(int64_t position);
int32_t InliningIdOf(int64_t position);

// A baseline (Sparkplug) code's bytecode offset table (src/baseline/
// bytecode-offset-iterator.h: one unsigned VLQ of machine code size per
// bytecode, the first for the prologue), with the bytecodes it was compiled
// from and V8's kBytecodeSizes[3][count] (operand scale 1, 2, 4): the offset
// of the bytecode whose code holds `pc_offset` (-1: the prologue). nullopt
// when the tables disagree (a size of 0, an opcode out of range, the
// bytecodes or the table end first) or after `max_steps` bytecodes.
std::optional<int32_t> BaselineBytecodeOffset(std::span<const uint8_t> offset_table,
                                              std::span<const uint8_t> bytecodes,
                                              std::span<const uint8_t> bytecode_sizes, uint32_t pc_offset,
                                              size_t max_steps);

// One InliningPosition of optimized code's deoptimization data (16 bytes:
// the raw position of the call in its caller, the inlined function's index in
// the literal array, padding).
struct V8Inlining {
  int64_t position = 0;
  int32_t function = -1;
};
constexpr size_t kV8InliningPositionSize = 16;
bool DecodeInliningPositions(std::span<const uint8_t> bytes, size_t max_entries, std::vector<V8Inlining>& out);

// The frames a raw position stands for in optimized code, innermost first:
// (function index, script offset) with index -1 for the code's own
// function. At most `max_depth` frames; false when an inlining id is out of
// range or the chain does not go strictly outwards (ids decrease).
struct V8InlinedFrame {
  int32_t function = -1;
  int32_t script_offset = -1;
};
bool InliningChain(int64_t position, const std::vector<V8Inlining>& inlinings, size_t max_depth,
                   std::vector<V8InlinedFrame>& out);

}  // namespace arcprof::runtimes
