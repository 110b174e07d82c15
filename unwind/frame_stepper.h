// How the unwinder steps out of JIT code without unwind tables: a runtime
// that lays out the frames of its code in anonymous memory (HotSpot's
// compiled methods, stubs and interpreter) provides a FrameStepper
// (runtimes/registry.cpp, MakeFrameSteppers), and the unwinder asks each one
// in turn for a frame of JIT code it found through JitCodeLookup. The
// unwinder itself knows no runtime's frame layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "spaces/jit_code.h"

namespace arcprof {

struct UnwinderStats;

// What a stepper sees of the walk: the copied stack, whether an address is
// code of the process, and the unwinder's counters.
class FrameStepContext {
 public:
  FrameStepContext(const uint8_t* stack, uint64_t stack_lo, size_t stack_len, UnwinderStats& stats)
      : stack_(stack), stack_lo_(stack_lo), stack_len_(stack_len), stats_(stats) {}
  virtual ~FrameStepContext() = default;
  // The 8 bytes at addr in the copied stack; false outside the copy.
  bool Read(uint64_t addr, uint64_t* out) const {
    if (addr < stack_lo_ || addr - stack_lo_ + 8 > stack_len_) return false;
    memcpy(out, stack_ + (addr - stack_lo_), 8);
    return true;
  }
  // Whether a return address is in code the process has: a mapped file or
  // JIT code (the call before it, addr - 1). 0 is not.
  virtual bool IsCode(uint64_t return_address) const = 0;
  UnwinderStats& stats() const { return stats_; }

 private:
  const uint8_t* stack_;
  uint64_t stack_lo_;
  size_t stack_len_;
  UnwinderStats& stats_;
};

class FrameStepper {
 public:
  // The registers of one frame: in, the frame's; out (kStepped), its
  // caller's, with `ra` the pc it returns to (0: no caller) and `method`
  // the runtime's method the frame ran, when it holds one (0 otherwise).
  struct Frame {
    uint64_t sp = 0;
    uint64_t bp = 0;
    uint64_t ra = 0;
    uint64_t method = 0;
  };
  enum class Step : uint8_t {
    kNotMine,  // not this runtime's code, or nothing to say: Frame untouched
    kStepped,  // Frame is the caller's
    kStop,     // this runtime's code, which cannot be stepped with confidence
  };
  virtual ~FrameStepper() = default;
  // One step out of `code` (JIT code at `lookup`: pc itself for a frame
  // that resumes there, else the return address - 1). `leaf`: the frame
  // resumes at pc (the sampled leaf, or a frame a signal interrupted), so
  // it may be stopped anywhere, in its prologue or epilogue too.
  virtual Step StepFrame(const FrameStepContext& context, const JitSymbol& code, bool leaf, uint64_t lookup,
                         Frame* frame) const = 0;
  // Whether a frame-pointer walk (libdwfl's, which steps JIT code through
  // rbp) must end after a frame of this code: what follows it through rbp
  // is not its caller.
  virtual bool EndsFramePointerWalk(const JitSymbol& code) const = 0;
};

}  // namespace arcprof
