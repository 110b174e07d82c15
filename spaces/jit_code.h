// JIT code facts (a runtime's compiled code in anonymous executable memory)
// and the narrow interface through which the unwinder asks for them: the
// symbolizer implements it from its JIT sources, so unwind/ needs nothing of
// symbolize/.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/frame.h"

namespace arcprof {

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
  // The frame of frame_size bytes holds the return address at its top and
  // does not save rbp (a runtime's fixed trampoline, e.g. CPython's -X perf
  // one: `sub $8,%rsp; call *%rcx; add $8,%rsp; ret`): stepping it keeps rbp.
  bool keeps_rbp = false;
};

class JitCodeLookup {
 public:
  virtual ~JitCodeLookup() = default;
  // JIT code (anonymous executable memory with a JIT source) at addr in pid
  // at t_ns, with its frame facts for the unwinder; nullopt otherwise.
  virtual std::optional<JitSymbol> FindJitCode(uint32_t pid, uint64_t addr, uint64_t t_ns) = 0;
};

}  // namespace arcprof
