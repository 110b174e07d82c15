// The unwinder's walk, in process (docs/performance.md, "Unwinding"): a walk
// of this process's own captured stack with CFI (native frames only), and a
// walk of a HotSpot stack laid out as a JVM lays it out (compiled methods
// stepped by their frame sizes, then interpreted frames through rbp with
// their Method*), stepped by the Java runtime's FrameStepper as a recording
// gives it to the unwinder (runtimes::MakeFrameSteppers).
// Run: ./unwind_walk_bench --benchmark_repetitions=5
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spaces/address_spaces.h"
#include "symbolize/symbolizer.h"
#include "tests/unwind/own_stack.h"
#include "unwind/unwinder.h"
#ifndef ARCPROF_UNWIND_BENCH_NO_STEPPERS
#include "runtimes/runtime.h"
#endif

namespace arcprof {
namespace {

void GiveSteppers(Unwinder& unwinder) {
#ifndef ARCPROF_UNWIND_BENCH_NO_STEPPERS
  unwinder.SetFrameSteppers(runtimes::MakeFrameSteppers());
#endif
}

// Native frames: this process's own stack, 20 frames below the benchmark.
void BM_NativeWalk(benchmark::State& state) {
  Captured c;
  CaptureDeeper(&c, StackTop(), 20);
  AddressSpaces spaces;
  Symbolizer symbolizer(spaces);
  spaces.SnapshotProcess(static_cast<uint32_t>(getpid()), 1000);
  Unwinder unwinder(spaces, symbolizer);
  GiveSteppers(unwinder);
  const UnwindInput input = OwnInput(c);
  size_t frames = 0;
  for (auto _ : state) {
    UnwindResult r = unwinder.Unwind(input, /*fp_fallback=*/true, 512);
    frames = r.pcs.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["frames"] = static_cast<double>(frames);
}
BENCHMARK(BM_NativeWalk);

// A fake JVM: kMethods compiled methods (frame sizes 32-80, with
// -XX:+PreserveFramePointer) and the interpreter in anonymous memory.
constexpr uint64_t kCode = 0x7f0000100000;
constexpr int kMethods = 8;
constexpr uint64_t kInterpreter = kCode + 0x10000;
int32_t FrameSize(int i) { return 32 + 16 * (i % 4); }
uint64_t Method(int i) { return kCode + 0x1000 * static_cast<uint64_t>(i); }

class FakeJvm : public JitSymbolSource {
 public:
  std::optional<JitSymbol> Find(uint64_t addr, uint64_t) override {
    JitSymbol s;
    if (addr >= kInterpreter && addr < kInterpreter + 0x1000) {
      s.name = "Interpreter";
      s.start = kInterpreter;
      s.kind = FrameKind::kInterpreted;
      return s;
    }
    if (addr < kCode || addr >= kCode + 0x1000 * kMethods || (addr & 0xfff) >= 0x100) return std::nullopt;
    const int i = static_cast<int>((addr - kCode) / 0x1000);
    s.name = "Compiled.method";
    s.start = Method(i);
    s.frame_size = FrameSize(i);
    s.frame_complete = 8;
    s.rbp_frame_pointer = true;
    return s;
  }
};

// 24 compiled frames over 8 interpreted ones, ending at a zero return address.
void BM_HotSpotWalk(benchmark::State& state) {
  constexpr uint32_t kPid = 4242;
  constexpr int kCompiled = 24, kInterpretedFrames = 8;
  constexpr uint64_t kSp = 0x7ffd00001000;
  char dir[] = "/tmp/arcprof-unwind-bench-XXXXXX";  // an empty /proc: nothing is read
  if (!mkdtemp(dir)) {
    state.SkipWithError("mkdtemp");
    return;
  }
  AddressSpacesOptions options;
  options.proc_root = dir;
  AddressSpaces spaces(options);
  Symbolizer symbolizer(spaces);
  symbolizer.SetJitSymbolSourceFactory([](const ProcessInfo&) { return std::make_unique<FakeJvm>(); });
  spaces.OnExec(kPid, 1, "java");
  MappingEvent code;
  code.start = kCode;
  code.len = 0x20000;
  code.prot = PROT_READ | PROT_EXEC;
  code.flags = MAP_PRIVATE | MAP_ANONYMOUS;
  code.path = "//anon";
  spaces.OnMmap(kPid, 1, code);
  Unwinder unwinder(spaces, symbolizer);
  GiveSteppers(unwinder);

  std::vector<uint8_t> stack(16384, 0);
  auto put = [&](uint64_t addr, uint64_t v) { std::memcpy(&stack[addr - kSp], &v, 8); };
  // Compiled frame j (method j % kMethods) spans [sp, sp + F): its caller's
  // return address at sp + F - 8, the caller's rbp at sp + F - 16; in the
  // body rbp = sp + F - 16.
  uint64_t sp = kSp;
  for (int j = 0; j < kCompiled; ++j) {
    const uint64_t cfa = sp + static_cast<uint64_t>(FrameSize(j % kMethods));
    const bool last = j + 1 == kCompiled;
    const uint64_t ra = last ? kInterpreter + 0x40 : Method((j + 1) % kMethods) + 0x40;
    const uint64_t caller_bp = last ? cfa + 48 : cfa + static_cast<uint64_t>(FrameSize((j + 1) % kMethods)) - 16;
    put(cfa - 8, ra);
    put(cfa - 16, caller_bp);
    sp = cfa;
  }
  // Interpreted frames: [rbp] the caller's rbp, [rbp+8] the return address,
  // [rbp-8] the sender sp, [rbp-24] the Method*.
  uint64_t bp = sp + 48;
  for (int k = 0; k < kInterpretedFrames; ++k) {
    const bool last = k + 1 == kInterpretedFrames;
    const uint64_t next_bp = bp + 16 + 48;
    put(bp, last ? 0 : next_bp);
    put(bp + 8, last ? 0 : kInterpreter + 0x40);
    put(bp - 8, bp + 16);
    put(bp - 24, 0x800000 + static_cast<uint64_t>(k));
    bp = next_bp;
  }
  uint64_t regs[kUnwindRegs] = {};
  regs[16] = Method(0) + 0x30;
  regs[7] = kSp;
  regs[6] = kSp + static_cast<uint64_t>(FrameSize(0)) - 16;
  UnwindInput input;
  input.pid = kPid;
  input.tid = kPid;
  input.t_ns = 2;
  input.regs = regs;
  input.stack = stack.data();
  input.stack_len = stack.size();
  size_t frames = 0;
  UnwindStop stop = UnwindStop::kComplete;
  for (auto _ : state) {
    UnwindResult r = unwinder.Unwind(input, /*fp_fallback=*/true, 512);
    frames = r.pcs.size();
    stop = r.stop;
    benchmark::DoNotOptimize(r);
  }
  rmdir(dir);
  if (stop != UnwindStop::kComplete || frames != kCompiled + kInterpretedFrames) {
    state.SkipWithError(("walk ended early: " + std::to_string(frames) + " frames, " + UnwindStopName(stop)).c_str());
  }
  state.counters["frames"] = static_cast<double>(frames);
}
BENCHMARK(BM_HotSpotWalk);

}  // namespace
}  // namespace arcprof

BENCHMARK_MAIN();
