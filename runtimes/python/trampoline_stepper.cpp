#include "runtimes/python/trampoline_stepper.h"

#include "unwind/unwinder.h"

namespace arcprof::runtimes {
namespace {

using Step = FrameStepper::Step;

class PythonTrampolineStepper : public FrameStepper {
 public:
  Step StepFrame(const FrameStepContext& context, const JitSymbol& code, bool leaf, uint64_t lookup,
                 Frame* frame) const override {
    if (!code.keeps_rbp || code.frame_size <= 0) return Step::kNotMine;
    // Before the `sub` (a leaf at the entry) the return address is on top;
    // from it on, frame_size - 8 above the stack pointer. A leaf at the
    // final `ret` has its frame gone again: the return address on top.
    const uint64_t offset = lookup - code.start;
    const bool entry = leaf && (code.frame_complete < 0 || offset < static_cast<uint64_t>(code.frame_complete));
    uint64_t cfa = frame->sp + (entry ? 8 : static_cast<uint64_t>(code.frame_size));
    uint64_t ra = 0;
    if (!context.Read(cfa - 8, &ra) || !context.IsCode(ra)) {
      if (!leaf || entry) return Step::kStop;
      cfa = frame->sp + 8;
      if (!context.Read(cfa - 8, &ra) || !context.IsCode(ra)) return Step::kStop;
    }
    frame->ra = ra;
    frame->sp = cfa;  // rbp is the caller's: the trampoline never touches it
    ++context.stats().jit_frames_stepped;
    return Step::kStepped;
  }
  // Its rbp is the caller's, which (an interpreter built without frame
  // pointers) is no frame pointer: a walk through rbp ends here.
  bool EndsFramePointerWalk(const JitSymbol& code) const override { return code.keeps_rbp; }
};

}  // namespace

std::unique_ptr<FrameStepper> MakePythonTrampolineStepper() { return std::make_unique<PythonTrampolineStepper>(); }

}  // namespace arcprof::runtimes
