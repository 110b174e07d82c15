// The hook for JIT symbol sources (perf maps, jitdump): anonymous executable
// memory is resolved through a per-process source when one is installed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "common/frame.h"

namespace arcprof {

struct ProcessInfo;

struct JitSymbol {
  std::string_view name;  // must stay valid for the Symbolizer's lifetime
  uint64_t start = 0;     // absolute code address
  FrameKind kind = FrameKind::kJit;  // kInterpreted for a runtime's interpreter
  // Methods the JIT inlined into `name` at this address, outermost first
  // (`name` itself not repeated); nullptr when none. Stays valid for the
  // Symbolizer's lifetime, like `name`.
  const std::vector<std::string_view>* inlined = nullptr;
  // How to step out of this code's frame without a frame pointer (HotSpot
  // compiled methods and stubs, from the agent): the frame's size in bytes
  // (0 unknown) and the code offset from which it is set up (-1 never).
  int32_t frame_size = 0;
  int32_t frame_complete = -1;
  // rbp is not a frame pointer here (compiled Java code in a JVM without
  // -XX:+PreserveFramePointer): step by frame_size or not at all.
  bool rbp_unreliable = false;
  // rbp is this code's frame pointer (compiled Java code in a JVM with
  // -XX:+PreserveFramePointer): inside the body it points frame_size - 16
  // above the stack pointer, which tells the body from its prologue and
  // epilogue.
  bool rbp_frame_pointer = false;
};

// Symbols of one process's JIT code, versioned by time like the mapping
// timeline (the latest entry loaded at or before t_ns covering addr).
class JitSymbolSource {
 public:
  virtual ~JitSymbolSource() = default;
  virtual std::optional<JitSymbol> Find(uint64_t addr, uint64_t t_ns) = 0;
  // A Java method's name by HotSpot's Method* (interpreted frames hold it),
  // as known at t_ns; the view stays valid for the source's lifetime.
  virtual std::optional<std::string_view> MethodName(uint64_t method, uint64_t t_ns) { return std::nullopt; }
  // About how many heap bytes the source holds (a daemon's -v accounting).
  virtual size_t bytes() const { return 0; }
};

// Called once per process, on its first JIT frame. May return nullptr (no
// perf map / jitdump for this process); the answer is then Unknown(kJitNoMap).
using JitSymbolSourceFactory =
    std::function<std::unique_ptr<JitSymbolSource>(const ProcessInfo& process)>;

}  // namespace arcprof
