// Frame kinds and unknown-frame reasons shared by the symbolizer, the capture
// store and every report. Values are stored in captures: never renumber.
#pragma once

#include <cstdint>
#include <string_view>

namespace arcprof {

enum class FrameKind : uint8_t {
  kKernel = 0,
  kNative = 1,
  kJit = 2,
  kInterpreted = 3,
  kUnknown = 4,
  // Interpreted runtimes' own frames (runtimes/, capture schema 7+): a
  // Python function, a JavaScript function. The module is the source file,
  // the symbol the function, the address the source line (low 32 bits) and
  // column (high 32 bits, 0 when not known); see SourceLine().
  kPython = 5,
  kJs = 6,
};
inline constexpr int kFrameKindCount = 7;

// A runtime's frame (kPython, kJs): named by function, file and line.
constexpr bool IsRuntimeKind(FrameKind k) { return k == FrameKind::kPython || k == FrameKind::kJs; }
// The source line and column a runtime frame's address holds.
constexpr uint32_t SourceLine(uint64_t address) { return static_cast<uint32_t>(address); }
constexpr uint32_t SourceColumn(uint64_t address) { return static_cast<uint32_t>(address >> 32); }
constexpr uint64_t SourceAddress(uint32_t line, uint32_t column = 0) {
  return static_cast<uint64_t>(column) << 32 | line;
}

// Why an address could not be named (blazesym's model). kNone for named frames.
enum class UnknownReason : uint8_t {
  kNone = 0,
  kUnmapped = 1,      // no mapping covered the address at the sample's time
  kNoSymbols = 2,     // the file has no symbol covering the address
  kStripped = 3,      // the file has no .symtab and no debug file was found
  kJitNoMap = 4,      // anonymous executable memory and no perf map / jitdump entry
  kFileUnavailable = 5,  // the mapped file could not be opened (gone, no access)
  kNoProcess = 6,     // the process was never seen (no /proc snapshot, no events)
  kKernelUnknown = 7, // kernel address outside kallsyms
  kTruncated = 8,     // a marker frame: frames are missing here (the walk stopped early,
                      // or the middle of a deep stack was left out: "[frames elided]")
};

inline constexpr int kUnknownReasonCount = 9;

// The marker (kUnknown, kTruncated) in place of the middle frames of a user
// stack too deep to keep whole; a marker without a name is "[truncated]".
inline constexpr std::string_view kElidedFramesName = "[frames elided]";

constexpr std::string_view FrameKindName(FrameKind k) {
  switch (k) {
    case FrameKind::kKernel: return "kernel";
    case FrameKind::kNative: return "native";
    case FrameKind::kJit: return "jit";
    case FrameKind::kInterpreted: return "interpreted";
    case FrameKind::kUnknown: return "unknown";
    case FrameKind::kPython: return "python";
    case FrameKind::kJs: return "js";
  }
  return "unknown";
}

constexpr std::string_view UnknownReasonName(UnknownReason r) {
  switch (r) {
    case UnknownReason::kNone: return "none";
    case UnknownReason::kUnmapped: return "unmapped";
    case UnknownReason::kNoSymbols: return "no symbols";
    case UnknownReason::kStripped: return "stripped";
    case UnknownReason::kJitNoMap: return "anonymous/JIT without a map";
    case UnknownReason::kFileUnavailable: return "file unavailable";
    case UnknownReason::kNoProcess: return "process not seen";
    case UnknownReason::kKernelUnknown: return "kernel address not in kallsyms";
    case UnknownReason::kTruncated: return "stack truncated";
  }
  return "unknown";
}

}  // namespace arcprof
