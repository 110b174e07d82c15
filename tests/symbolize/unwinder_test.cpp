// The unwinder on this test's own stack: registers and a copy of the stack
// taken in-process, the address space from /proc/self/maps.
#include "symbolize/unwinder.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "symbolize/symbolizer.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

// The top of the main thread's stack, from /proc/self/maps.
uint64_t StackTop() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("[stack]") == std::string::npos) continue;
    return std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
  }
  return 0;
}

struct Captured {
  uint64_t regs[kUnwindRegs] = {};
  std::vector<uint8_t> stack;
};

// rip, rsp and rbp here, and the stack above rsp (callers' frames).
__attribute__((noinline)) void Capture(Captured* out, uint64_t top) {
  uint64_t rip, rsp, rbp;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(rip), "=r"(rsp), "=r"(rbp));
  out->regs[16] = rip;
  out->regs[7] = rsp;
  out->regs[6] = rbp;
  const uint64_t len = std::min<uint64_t>(32768, top > rsp ? top - rsp : 0);
  out->stack.resize(len);
  std::memcpy(out->stack.data(), reinterpret_cast<const void*>(rsp), len);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void CaptureDeeper(Captured* out, uint64_t top, int depth) {
  if (depth == 0) {
    Capture(out, top);
  } else {
    CaptureDeeper(out, top, depth - 1);
  }
  asm volatile("" ::: "memory");  // not a tail call: each level keeps its frame
}

UnwindResult UnwindOwn(Unwinder& unwinder, const Captured& c) {
  UnwindInput input;
  input.pid = static_cast<uint32_t>(getpid());
  input.tid = static_cast<uint32_t>(gettid());
  input.t_ns = 2000;
  input.regs = c.regs;
  input.stack = c.stack.data();
  input.stack_len = c.stack.size();
  return unwinder.Unwind(input, /*fp_fallback=*/false, 128);
}

// A CFI budget smaller than any file's: every step into another file drops
// the previous file's CFI and reads its own again; the walk is the same.
TEST(Unwinder, CfiBudgetDropsAndRereadsWithTheSameWalk) {
  if (getpid() != gettid()) GTEST_SKIP() << "needs the main thread's stack";
  const uint64_t top = StackTop();
  ASSERT_NE(top, 0u);
  Captured c;
  CaptureDeeper(&c, top, 3);
  Symbolizer symbolizer;
  symbolizer.SnapshotProcess(static_cast<uint32_t>(getpid()), 1000);

  Unwinder roomy(symbolizer);
  const UnwindResult expected = UnwindOwn(roomy, c);
  // Capture, four CaptureDeeper frames, the test body, gtest, main, libc.
  ASSERT_GE(expected.pcs.size(), 8u);
  EXPECT_EQ(roomy.stats().cfi_released, 0u);

  Unwinder tight(symbolizer, /*cfi_budget_bytes=*/1);
  for (int round = 0; round < 2; ++round) {
    const UnwindResult r = UnwindOwn(tight, c);
    EXPECT_EQ(r.pcs, expected.pcs);
    EXPECT_EQ(r.stop, expected.stop);
  }
  // The walk crosses the test binary, libstdc++/gtest and libc at least.
  EXPECT_GE(tight.stats().cfi_released, 2u);
  EXPECT_LT(tight.stats().cfi_bytes, roomy.stats().cfi_bytes + 1);
}

}  // namespace
}  // namespace arcprof
