#include "reports/folded.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tests/reports/golden.h"
#include "tests/reports/test_profiles.h"

namespace arcprof {
namespace {

using testing::ExpectGolden;
using testing::SampleProfile;

FrameRecord Named(std::string module, std::string symbol, FrameKind kind) {
  FrameRecord f;
  f.module = std::move(module);
  f.symbol = std::move(symbol);
  f.kind = kind;
  return f;
}

TEST(FoldedNames, SuffixesFollowFlameGraphConventions) {
  EXPECT_EQ(FoldedFrameName(Named("vmlinux", "do_syscall_64", FrameKind::kKernel)), "do_syscall_64_[k]");
  EXPECT_EQ(FoldedFrameName(Named("JITCODE", "Lcom/A;.run()V", FrameKind::kJit)), "Lcom/A:.run()V_[j]");
  EXPECT_EQ(FoldedFrameName(Named("python", "py::f:/x.py", FrameKind::kInterpreted)), "py::f:/x.py_[j]");
  EXPECT_EQ(FoldedFrameName(Named("/bin/x", "main", FrameKind::kNative)), "main");
  FrameRecord inlined = Named("/bin/x", "helper", FrameKind::kNative);
  inlined.inlined = true;
  EXPECT_EQ(FoldedFrameName(inlined), "helper_[i]");
}

TEST(FoldedNames, UnknownFramesShowTheirModule) {
  FrameRecord f = Named("/usr/lib/libz.so.1", "", FrameKind::kNative);
  f.reason = UnknownReason::kStripped;
  EXPECT_EQ(FoldedFrameName(f), "[libz.so.1]");
  EXPECT_EQ(FoldedFrameName(Named("[vdso]", "", FrameKind::kNative)), "[vdso]");
  EXPECT_EQ(FoldedFrameName(Named("", "", FrameKind::kUnknown)), "[unknown]");
  EXPECT_EQ(FoldedFrameName(Named("vmlinux", "", FrameKind::kKernel)), "[vmlinux]_[k]");
  FrameRecord marker = Named("", "", FrameKind::kUnknown);
  marker.reason = UnknownReason::kTruncated;
  EXPECT_EQ(FoldedFrameName(marker), "[truncated]");
}

TEST(FoldedNames, NamesCannotBreakTheLineFormat) {
  EXPECT_EQ(FoldedFrameName(Named("/x", "a;b;c", FrameKind::kNative)), "a:b:c");
  EXPECT_EQ(FoldedFrameName(Named("/x", "evil\nname 12", FrameKind::kNative)), "evil?name_12");
  EXPECT_EQ(FoldedFrameName(Named("/x", "tab\there", FrameKind::kNative)), "tab?here");
  ThreadRecord thread;
  thread.process_comm = "busy loop;x";
  EXPECT_EQ(FoldedProcessName(thread), "busy_loop:x");
  thread.process_comm.clear();
  thread.comm = "worker 1";
  EXPECT_EQ(FoldedProcessName(thread), "worker_1");
}

TEST(Folded, OneLinePerUniqueStackWithSummedCounts) {
  const auto stacks = FoldStacks(SampleProfile(), ThreadFilter{});
  // Both java threads end in the same kernel stack only via different callers,
  // so every stack stays distinct; the counts add up to all samples.
  uint64_t total = 0;
  for (const auto& [stack, count] : stacks) total += count;
  EXPECT_EQ(total, 1995u);
  EXPECT_EQ(stacks.size(), 11u);
  EXPECT_EQ(stacks.at("busy_loop;__libc_start_main;main;f_heavy"), 750u);
  EXPECT_EQ(stacks.at("busy_loop;__libc_start_main;main;f_heavy;inline_helper_[i]"), 60u);
  EXPECT_EQ(stacks.at("java;__libc_start_main;JavaThread::run();Lcom/acme/App:.run()V_[j]"), 500u);
  EXPECT_EQ(stacks.at("systemd;entry_SYSCALL_64_[k];_raw_spin_unlock_irqrestore_[k]"), 15u);
}

TEST(Folded, ThreadsOfOneProcessWithTheSameStackMerge) {
  Profile profile = SampleProfile();
  const uint32_t other = profile.ThreadIndex(4156, 4999);
  profile.threads[other].process_comm = "java";
  profile.threads[other].comm = "worker";
  const auto& main_nodes = profile.trees[0].nodes();
  std::vector<uint32_t> stack;  // the main thread's JIT stack, root first
  for (uint32_t n = 3; n != 0; n = main_nodes[n].parent) stack.insert(stack.begin(), main_nodes[n].frame);
  profile.trees[other].AddStack(stack, 9);
  const auto stacks = FoldStacks(profile, ThreadFilter{});
  EXPECT_EQ(stacks.at("java;__libc_start_main;JavaThread::run();Lcom/acme/App:.run()V_[j]"), 509u);
}

TEST(Folded, Golden) {
  std::ostringstream all;
  WriteFolded(SampleProfile(), ThreadFilter{}, all);
  ExpectGolden("folded_all.txt", all.str());
  ThreadFilter filter;
  filter.pids = {4156};
  std::ostringstream java;
  WriteFolded(SampleProfile(), filter, java);
  ExpectGolden("folded_pid4156.txt", java.str());
}

TEST(Folded, EveryLineIsStackSpaceInteger) {
  std::ostringstream out;
  WriteFolded(SampleProfile(), ThreadFilter{}, out);
  std::istringstream in(out.str());
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    const auto space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    EXPECT_EQ(line.find_first_not_of("0123456789", space + 1), std::string::npos) << line;
    EXPECT_NE(line[space - 1], ' ') << line;
  }
  EXPECT_EQ(lines, 11);
}

}  // namespace
}  // namespace arcprof
