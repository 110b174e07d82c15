#include "reports/folded.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "tests/reports/golden.h"
#include "tests/model/test_profiles.h"
#include "tests/layer_names.h"

namespace arcprof {
namespace {

using testing::ExpectGolden;
using testing::SampleProfile;

// The frames of these name tests, with their modules.
FrameTable& Table() {
  static FrameTable table;
  return table;
}

FrameRecord Named(std::string module, std::string symbol, FrameKind kind) {
  FrameRecord f;
  f.module = Table().InternModule(module);
  f.symbol = std::move(symbol);
  f.kind = kind;
  return f;
}

std::string Folded(const FrameRecord& f) { return FoldedFrameName(Table(), Table().Intern(f)); }

TEST(FoldedNames, SuffixesFollowFlameGraphConventions) {
  EXPECT_EQ(Folded(Named("vmlinux", "do_syscall_64", FrameKind::kKernel)), "do_syscall_64_[k]");
  EXPECT_EQ(Folded(Named("JITCODE", "Lcom/A;.run()V", FrameKind::kJit)), "Lcom/A:.run()V_[j]");
  EXPECT_EQ(Folded(Named("python", "py::f:/x.py", FrameKind::kInterpreted)), "py::f:/x.py_[j]");
  EXPECT_EQ(Folded(Named("/bin/x", "main", FrameKind::kNative)), "main");
  FrameRecord inlined = Named("/bin/x", "helper", FrameKind::kNative);
  inlined.inlined = true;
  EXPECT_EQ(Folded(inlined), "helper_[i]");
}

// A runtime's frame: its function, and with --lines its file and line.
TEST(FoldedNames, RuntimeFramesWithAndWithoutLines) {
  FrameRecord py = Named("/srv/app.py", "Server.handle", FrameKind::kPython);
  py.address = SourceAddress(42);
  FrameRecord js = Named("/srv/app.js", "render", FrameKind::kJs);
  js.address = SourceAddress(7, 3);
  EXPECT_EQ(Folded(py), "Server.handle_[j]");
  EXPECT_EQ(Folded(js), "render_[j]");
  EXPECT_EQ(FoldedFrameName(Table(), Table().Intern(py), true), "Server.handle (/srv/app.py:42)_[j]");
  EXPECT_EQ(FoldedFrameName(Table(), Table().Intern(js), true), "render (/srv/app.js:7)_[j]");
}

TEST(FoldedNames, UnknownFramesShowTheirModule) {
  FrameRecord f = Named("/usr/lib/libz.so.1", "", FrameKind::kNative);
  f.reason = UnknownReason::kStripped;
  EXPECT_EQ(Folded(f), "[libz.so.1]");
  f.address = 0x1a2b;  // captures keep where an unnamed instruction is
  EXPECT_EQ(Folded(f), "[libz.so.1+0x1a2b]");
  EXPECT_EQ(Folded(Named("[vdso]", "", FrameKind::kNative)), "[vdso]");
  EXPECT_EQ(Folded(Named("", "", FrameKind::kUnknown)), "[unknown]");
  EXPECT_EQ(Folded(Named("vmlinux", "", FrameKind::kKernel)), "[vmlinux]_[k]");
  FrameRecord marker = Named("", "", FrameKind::kUnknown);
  marker.reason = UnknownReason::kTruncated;
  EXPECT_EQ(Folded(marker), "[truncated]");
}

TEST(FoldedNames, NamesCannotBreakTheLineFormat) {
  EXPECT_EQ(Folded(Named("/x", "a;b;c", FrameKind::kNative)), "a:b:c");
  EXPECT_EQ(Folded(Named("/x", "evil\nname 12", FrameKind::kNative)), "evil?name_12");
  EXPECT_EQ(Folded(Named("/x", "tab\there", FrameKind::kNative)), "tab?here");
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
  const auto& main_nodes = profile.threads[0].tree.nodes();
  std::vector<uint32_t> stack;  // the main thread's JIT stack, root first
  for (uint32_t n = 3; n != 0; n = main_nodes[n].parent) stack.insert(stack.begin(), main_nodes[n].frame);
  profile.threads[other].tree.AddStack(stack, 9);
  const auto stacks = FoldStacks(profile, ThreadFilter{});
  EXPECT_EQ(stacks.at("java;__libc_start_main;JavaThread::run();Lcom/acme/App:.run()V_[j]"), 509u);
}

// Names that differ in the fold by name but read the same as folded elements
// (';' is ':', JIT and interpreted share "_[j]") are one element: their
// stacks merge into one line with the summed count, in WriteFolded's order.
TEST(Folded, NamesThatFoldToOneElementMerge) {
  Profile profile;
  auto frame = [&](std::string symbol, FrameKind kind) {
    FrameRecord f;
    f.module = profile.frames.InternModule("/x");
    f.symbol = std::move(symbol);
    f.kind = kind;
    return profile.frames.Intern(f);
  };
  const uint32_t main = frame("main", FrameKind::kNative);
  const uint32_t semi = frame("a;b", FrameKind::kNative), colon = frame("a:b", FrameKind::kNative);
  const uint32_t jit = frame("run", FrameKind::kJit), interpreted = frame("run", FrameKind::kInterpreted);
  const uint32_t t = profile.ThreadIndex(7, 7);
  profile.threads[t].process_comm = "p";
  for (const auto& [leaf, count] : std::vector<std::pair<uint32_t, uint64_t>>{
           {semi, 1}, {colon, 2}, {jit, 4}, {interpreted, 8}}) {
    const uint32_t stack[] = {main, leaf};
    profile.threads[t].tree.AddStack(stack, count);
  }
  std::ostringstream out;
  WriteFolded(profile, ThreadFilter{}, out);
  EXPECT_EQ(out.str(), "p;main;a:b 3\np;main;run_[j] 12\n");
}

// A hostile capture: one 20,000-deep chain with a sample at every depth. The
// folded text of it is quadratic in the depth (each line repeats its callers);
// cut at kMaxFoldedDepth it stays small, and no sample is lost.
TEST(Folded, DeepStacksAreCutAndStayBounded) {
  Profile profile;
  const uint32_t thread = profile.ThreadIndex(1, 1);
  profile.threads[thread].process_comm = "deep";
  constexpr uint32_t kDepth = 20000;
  std::vector<uint32_t> stack;
  for (uint32_t d = 0; d < kDepth; ++d) {
    stack.push_back(profile.frames.Intern(Named("/bin/deep", "f" + std::to_string(d % 7), FrameKind::kNative)));
    profile.threads[thread].tree.AddStack(stack, 1);
  }
  std::ostringstream out;
  WriteFolded(profile, ThreadFilter{}, out);
  const std::string text = out.str();
  // About 1024 lines of up to ~3 KB, not 20,000 lines of up to 60 KB (0.6 GB).
  EXPECT_LT(text.size(), 8u << 20);
  uint64_t total = 0, cut = 0, deepest = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto space = line.rfind(' ');
    const uint64_t count = std::stoull(line.substr(space + 1));
    total += count;
    const uint64_t depth = static_cast<uint64_t>(std::count(line.begin(), line.end(), ';'));
    deepest = std::max(deepest, depth);
    if (line.find(";[deeper frames cut] ") != std::string::npos) cut += count;
  }
  EXPECT_EQ(total, kDepth);
  EXPECT_EQ(cut, kDepth - kMaxFoldedDepth);
  EXPECT_EQ(deepest, kMaxFoldedDepth + 1);
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
