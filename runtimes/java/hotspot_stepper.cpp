#include "runtimes/java/hotspot_stepper.h"

#include <string_view>

#include "unwind/unwinder.h"

namespace arcprof::runtimes {
namespace {

// HotSpot's i2c/c2i adapters, as the agent names them (JDK 17 and 25).
bool IsHotSpotAdapter(std::string_view name) {
  return name.rfind("I2C/C2I adapters", 0) == 0 || name == "adapters";
}

using Step = FrameStepper::Step;

Step StepHotSpot(const FrameStepContext& context, const JitSymbol& code, bool leaf, uint64_t lookup,
                 FrameStepper::Frame* frame) {
  // The frame's registers, stepped in place to its caller's.
  uint64_t& sp = frame->sp;
  uint64_t& bp = frame->bp;
  uint64_t& ra = frame->ra;
  if (code.kind == FrameKind::kInterpreted) {
    // HotSpot's interpreter keeps rbp as its frame pointer: [rbp] the
    // caller's rbp, [rbp+8] the return address, [rbp-8] the caller's stack
    // pointer ("sender sp"), [rbp-24] the Method*.
    uint64_t next_bp;
    if (bp < sp || !context.Read(bp + 8, &ra) || !context.Read(bp, &next_bp)) return Step::kStop;
    uint64_t method = 0;
    if (context.Read(bp - 24, &method)) frame->method = method;
    // The caller's stack pointer is not always rbp + 16: a compiled caller
    // reaches the interpreter through an adapter (c2i) that pushes the
    // arguments below the caller's frame. The caller's frame size counts
    // from its own stack pointer, which the interpreter saved at [rbp-8];
    // stepping a compiled caller from rbp + 16 reads its return address in
    // the wrong slot (measured: every walk through an interpreted callee of
    // compiled code ended or skipped frames).
    uint64_t sender_sp = 0;
    if (context.Read(bp - 8, &sender_sp) && sender_sp >= bp + 16 && sender_sp - bp < (1u << 20)) {
      sp = sender_sp;
    } else {
      sp = bp + 16;
    }
    bp = next_bp;
    ++context.stats().interpreted_frames;
    return ra == 0 || context.IsCode(ra) ? Step::kStepped : Step::kStop;
  }
  if (code.frame_size > 0) {
    const uint64_t offset = lookup - code.start;
    uint64_t cfa = sp + static_cast<uint64_t>(code.frame_size);
    // A leaf whose frame is in motion (prologue, epilogue): HotSpot's are
    // `push %rbp; [mov %rsp,%rbp;] sub $F-16,%rsp` (or, without a stack
    // bang, `sub $F-8,%rsp; mov %rbp,F-16(%rsp)`) and `add $F-16,%rsp;
    // pop %rbp; [poll;] ret`. Each state leaves its own mark:
    //  - rbp == rsp: just after `mov %rsp,%rbp`, or after the epilogue's
    //    `add` (the body's rbp is then rsp): the saved rbp on top, the
    //    return address above it;
    //  - the top of the stack equals rbp: just after `push %rbp`;
    //  - a code address on top: at the entry, before `push %rbp`, or after
    //    the epilogue's `pop %rbp` (rbp is the caller's again);
    //  - in the prologue only, after `sub` without a bang: the body's
    //    return address slot, rbp still the caller's.
    // A body leaf never shows the first two (its rbp is F-16 above rsp) and
    // keeps data, not code addresses, on top of its stack.
    auto in_motion = [&](bool prologue) -> Step {
      uint64_t top = 0, above = 0;
      if (!context.Read(sp, &top)) return Step::kStop;
      if ((bp == sp || top == bp) && context.Read(sp + 8, &above) && context.IsCode(above)) {
        ra = above;
        bp = top;
        sp += 16;
      } else if (context.IsCode(top)) {
        ra = top;
        sp += 8;
      } else if (prologue && context.Read(cfa - 8, &ra) && context.IsCode(ra)) {
        sp = cfa;
      } else {
        return Step::kStop;
      }
      ++context.stats().jit_frames_stepped;
      return Step::kStepped;
    };
    if (leaf && (code.frame_complete < 0 || offset < static_cast<uint64_t>(code.frame_complete))) {
      if (offset == 0) {  // the entry: the return address on top
        cfa = sp + 8;
        if (!context.Read(sp, &ra)) return Step::kStop;
        sp = cfa;
        return context.IsCode(ra) ? Step::kStepped : Step::kStop;
      }
      return in_motion(/*prologue=*/true);
    }
    // With PreserveFramePointer the body keeps rbp = the saved-rbp slot,
    // frame size - 16 above rsp; a leaf where it is not is in an epilogue
    // (rsp already moved): its frame size would read the return address
    // from the wrong slot, and in_motion reads the state's own mark instead.
    // (Measured on Split: 1 of 1,773 leaf samples in compiled code.)
    if (leaf && code.rbp_frame_pointer && bp != cfa - 16) {
      // One exception: C2's inlined String.compareTo intrinsic keeps one
      // word pushed inside the body, so rsp is 8 below the body's and this
      // frame's rbp sits frame size - 8 above it (seen in every such
      // sample: rbp - rsp = frame size - 8, leaf String.compareTo). The
      // word on top is then a pushed value, not a code address; right after
      // the epilogue's `pop %rbp` the same distance can occur by chance, but
      // there the top of the stack is the return address. (Measured on the
      // capture bench's JDK 17 program: 2.4% of its samples ended here, in
      // TimSort.mergeHi/mergeLo with String.compareTo inlined.)
      uint64_t top = 0;
      if (bp != cfa - 8 || !context.Read(sp, &top) || context.IsCode(top)) return in_motion(/*prologue=*/false);
      cfa = bp + 16;
    }
    uint64_t saved_bp;
    if (!context.Read(cfa - 8, &ra) || !context.Read(cfa - 16, &saved_bp)) return Step::kStop;
    if (!context.IsCode(ra)) return Step::kStop;
    sp = cfa;
    bp = saved_bp;
    ++context.stats().jit_frames_stepped;
    return Step::kStepped;
  }
  // HotSpot's i2c/c2i adapters have no frame of their own: they move the
  // return address and the arguments between the interpreter's and compiled
  // code's conventions, and rbp still belongs to the caller (the
  // interpreter's frame pointer, or anything in compiled code). Stepping
  // through rbp would skip the caller: end the walk here instead.
  if (IsHotSpotAdapter(code.name)) return Step::kStop;
  return Step::kNotMine;
}

class HotSpotFrameStepper : public FrameStepper {
 public:
  Step StepFrame(const FrameStepContext& context, const JitSymbol& code, bool leaf, uint64_t lookup,
                 Frame* frame) const override {
    return StepHotSpot(context, code, leaf, lookup, frame);
  }
  bool EndsFramePointerWalk(const JitSymbol& code) const override { return IsHotSpotAdapter(code.name); }
};

}  // namespace

std::unique_ptr<FrameStepper> MakeHotSpotFrameStepper() { return std::make_unique<HotSpotFrameStepper>(); }

}  // namespace arcprof::runtimes
