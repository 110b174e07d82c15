// HotSpot's frames stepped by the Java runtime's FrameStepper
// (runtimes/java/hotspot_stepper.cpp), given to the unwinder through the
// runtimes' registry as a recording does, on stacks laid out as HotSpot lays
// them out: compiled methods known to a JIT source with their frame sizes.
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtimes/runtime.h"
#include "spaces/address_spaces.h"
#include "symbolize/symbolizer.h"
#include "unwind/unwinder.h"

namespace arcprof {
namespace {

// HotSpot code stepped by frame size, in a fake JVM: three compiled methods
// in anonymous executable memory, each known to a JIT source with its frame
// size, in a JVM with -XX:+PreserveFramePointer (rbp is the frame pointer).
class FakeJitMethods : public JitSymbolSource {
 public:
  static constexpr uint64_t kCode = 0x7f0000100000;
  static constexpr uint64_t kLeaf = kCode + 0x1000;    // frame size 48
  static constexpr uint64_t kCaller = kCode + 0x2000;  // frame size 64
  static constexpr uint64_t kOuter = kCode + 0x3000;   // frame size 32
  std::optional<JitSymbol> Find(uint64_t addr, uint64_t) override {
    for (const auto& [start, size, name] : {std::tuple{kLeaf, 48, "Leaf.work"},
                                            std::tuple{kCaller, 64, "Caller.run"},
                                            std::tuple{kOuter, 32, "Outer.main"}}) {
      if (addr < start || addr >= start + 0x100) continue;
      JitSymbol s;
      s.name = name;
      s.start = start;
      s.frame_size = size;
      s.frame_complete = 8;
      s.rbp_frame_pointer = true;
      return s;
    }
    return std::nullopt;
  }
};

class JitStepping : public ::testing::Test {
 protected:
  static constexpr uint32_t kPid = 4242;
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("arcprof-unwind-jit-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);  // an empty /proc: nothing is read
    AddressSpacesOptions options;
    options.proc_root = dir_.string();
    spaces_ = std::make_unique<AddressSpaces>(options);
    symbolizer_ = std::make_unique<Symbolizer>(*spaces_);
    symbolizer_->SetJitSymbolSourceFactory(
        [](const ProcessInfo&) { return std::make_unique<FakeJitMethods>(); });
    spaces_->OnExec(kPid, 1, "java");
    MappingEvent code;
    code.start = FakeJitMethods::kCode;
    code.len = 0x10000;
    code.prot = PROT_READ | PROT_EXEC;
    code.flags = MAP_PRIVATE | MAP_ANONYMOUS;
    code.path = "//anon";
    spaces_->OnMmap(kPid, 1, code);
    unwinder_ = std::make_unique<Unwinder>(*spaces_, *symbolizer_);
    unwinder_->SetFrameSteppers(runtimes::MakeFrameSteppers());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The leaf is Leaf.work at rsp = kSp with rbp = `bp`, `top` on top of the
  // stack; above the leaf's frame (which ends at `leaf_cfa`) Caller.run's
  // frame of 64 bytes returns into Outer.main.
  UnwindResult Walk(uint64_t bp, uint64_t top, uint64_t leaf_cfa) {
    // In the body (past frame_complete); Caller.run's rbp saved below the
    // return address into it.
    return WalkInMotion(FakeJitMethods::kLeaf + 0x30, bp, leaf_cfa,
                        {{kSp, top}, {leaf_cfa - 8, FakeJitMethods::kCaller + 0x40}, {leaf_cfa - 16, leaf_cfa + 64 - 16}});
  }

  // The leaf is Leaf.work at `pc` with rsp = kSp and rbp = `bp`, the stack
  // holding `words` (address, value); Caller.run's frame (64 bytes) starts
  // at `caller_sp` and returns into Outer.main.
  UnwindResult WalkInMotion(uint64_t pc, uint64_t bp, uint64_t caller_sp,
                            std::vector<std::pair<uint64_t, uint64_t>> words) {
    stack_.assign(256, 0);
    auto put = [&](uint64_t addr, uint64_t v) { std::memcpy(&stack_[addr - kSp], &v, 8); };
    for (const auto& [addr, v] : words) put(addr, v);
    put(caller_sp + 64 - 8, FakeJitMethods::kOuter + 0x20);
    put(caller_sp + 64 - 16, caller_sp + 64 + 32 - 16);
    uint64_t regs[kUnwindRegs] = {};
    regs[16] = pc;
    regs[7] = kSp;
    regs[6] = bp;
    UnwindInput input;
    input.pid = kPid;
    input.tid = kPid;
    input.t_ns = 2;
    input.regs = regs;
    input.stack = stack_.data();
    input.stack_len = stack_.size();
    return unwinder_->Unwind(input, /*fp_fallback=*/true, 3);
  }
  static std::vector<uint64_t> FullChain(uint64_t leaf_pc) {
    return {leaf_pc, FakeJitMethods::kCaller + 0x40, FakeJitMethods::kOuter + 0x20};
  }

  static constexpr uint64_t kSp = 0x7ffd00001000;
  std::filesystem::path dir_;
  std::unique_ptr<AddressSpaces> spaces_;
  std::unique_ptr<Symbolizer> symbolizer_;
  std::unique_ptr<Unwinder> unwinder_;
  std::vector<uint8_t> stack_;
};

TEST_F(JitStepping, BodyLeafStepsByFrameSize) {
  const uint64_t cfa = kSp + 48;
  const UnwindResult r = Walk(/*bp=*/cfa - 16, /*top=*/7, cfa);
  EXPECT_EQ(r.pcs, (std::vector<uint64_t>{FakeJitMethods::kLeaf + 0x30, FakeJitMethods::kCaller + 0x40,
                                          FakeJitMethods::kOuter + 0x20}));
  EXPECT_EQ(r.stop, UnwindStop::kMaxDepth);
}

// C2's inlined String.compareTo keeps one word pushed in the body: rsp is 8
// below the body's, so the frame ends 56 bytes above it and rbp is frame
// size - 8 above rsp. The walk goes on through rbp (it ended at the leaf:
// 2.4% of a JDK 17 program's samples).
TEST_F(JitStepping, OneWordPushedInTheBodyStepsThroughRbp) {
  const uint64_t cfa = kSp + 8 + 48;
  const UnwindResult r = Walk(/*bp=*/cfa - 16, /*top=*/static_cast<uint64_t>(-3), cfa);
  EXPECT_EQ(r.pcs, (std::vector<uint64_t>{FakeJitMethods::kLeaf + 0x30, FakeJitMethods::kCaller + 0x40,
                                          FakeJitMethods::kOuter + 0x20}));
  EXPECT_EQ(r.stop, UnwindStop::kMaxDepth);
}

// A leaf whose frame is in motion, in each state HotSpot's prologue and
// epilogue pass through; every one steps to Caller.run and on to Outer.main.
constexpr uint64_t kCallerRbp(uint64_t caller_sp) { return caller_sp + 64 - 16; }

// After the epilogue's `add $F-16,%rsp`: rbp (the body's) equals rsp, the
// saved rbp on top, the return address above it.
TEST_F(JitStepping, EpilogueAfterAddStepsThroughTheSavedRbp) {
  const uint64_t caller_sp = kSp + 16;
  const uint64_t pc = FakeJitMethods::kLeaf + 0x30;
  const UnwindResult r = WalkInMotion(pc, /*bp=*/kSp, caller_sp,
                                      {{kSp, kCallerRbp(caller_sp)}, {kSp + 8, FakeJitMethods::kCaller + 0x40}});
  EXPECT_EQ(r.pcs, FullChain(pc));
  EXPECT_EQ(r.stop, UnwindStop::kMaxDepth);
}

// After the epilogue's `pop %rbp`: the return address on top, rbp the
// caller's. Here rbp also sits frame size - 8 above rsp, the distance of the
// pushed-word case above, which must not be taken for it (stepping through
// rbp would skip the caller).
TEST_F(JitStepping, EpilogueAfterPopStepsToTheReturnAddressOnTop) {
  const uint64_t caller_sp = kSp + 8;
  const uint64_t pc = FakeJitMethods::kLeaf + 0x30;
  for (uint64_t bp : {kCallerRbp(caller_sp), kSp + 48 - 8}) {
    const UnwindResult r = WalkInMotion(pc, bp, caller_sp, {{kSp, FakeJitMethods::kCaller + 0x40}});
    EXPECT_EQ(r.pcs, FullChain(pc)) << "rbp " << bp - kSp << " above rsp";
  }
}

// In the prologue right after `push %rbp` (the top equals rbp), and after
// `mov %rsp,%rbp` (rbp equals rsp).
TEST_F(JitStepping, PrologueAfterPushRbpStepsThroughIt) {
  const uint64_t caller_sp = kSp + 16;
  const uint64_t pc = FakeJitMethods::kLeaf + 2;  // before frame_complete (8)
  const uint64_t caller_rbp = kCallerRbp(caller_sp);
  for (uint64_t bp : {caller_rbp, kSp}) {
    const UnwindResult r =
        WalkInMotion(pc, bp, caller_sp, {{kSp, caller_rbp}, {kSp + 8, FakeJitMethods::kCaller + 0x40}});
    EXPECT_EQ(r.pcs, FullChain(pc)) << "rbp " << bp;
  }
}

// A frame without a bang: `sub $F-8,%rsp` done, rbp not saved yet: the
// return address is where the body's is, rbp still the caller's.
TEST_F(JitStepping, PrologueAfterSubStepsByFrameSize) {
  const uint64_t caller_sp = kSp + 48;
  const uint64_t pc = FakeJitMethods::kLeaf + 4;
  const UnwindResult r = WalkInMotion(pc, kCallerRbp(caller_sp), caller_sp,
                                      {{kSp, 5}, {kSp + 48 - 8, FakeJitMethods::kCaller + 0x40}});
  EXPECT_EQ(r.pcs, FullChain(pc));
}

// Inside the body with rbp somewhere else and data on top: nothing says
// where the return address is, and the walk ends at the leaf.
TEST_F(JitStepping, BodyWithoutAnyMarkEndsTheWalk) {
  const UnwindResult r = WalkInMotion(FakeJitMethods::kLeaf + 0x30, /*bp=*/kSp + 0x80, kSp + 48,
                                      {{kSp, 5}, {kSp + 8, 6}, {kSp + 48 - 8, FakeJitMethods::kCaller + 0x40}});
  EXPECT_EQ(r.pcs, (std::vector<uint64_t>{FakeJitMethods::kLeaf + 0x30}));
  EXPECT_EQ(r.stop, UnwindStop::kJitFrame);
}

}  // namespace
}  // namespace arcprof
