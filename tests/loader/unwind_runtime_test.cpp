// Runtime tests of stack completeness: real programs without frame pointers
// (stock python3, gzip, qsort in libc), frameless leaves, and a real JVM.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kPrograms = ARCPROF_TEST_PROGRAMS;

// A stack is complete when its outermost user frame is where threads begin.
bool IsThreadStart(const std::string& name) {
  static const std::set<std::string> kRoots = {"_start", "start_thread", "clone3", "clone",
                                               "__clone3", "__clone", "thread_start"};
  return kRoots.count(name) > 0 || name.rfind("__libc_start_main", 0) == 0;
}

struct Completeness {
  uint64_t samples = 0;
  uint64_t complete = 0;
  std::map<std::vector<std::string>, uint64_t> stacks;
  double share() const { return samples ? static_cast<double>(complete) / samples : 0; }
};

// Samples of threads whose comm is `comm` (user stacks only: kernel frames are
// dropped from the paths).
Completeness Measure(const Profile& p, const std::string& comm) {
  Completeness c;
  for (size_t t = 0; t < p.threads.size(); ++t) {
    if (p.threads[t].comm != comm) continue;
    const CallTree& tree = p.threads[t].tree;
    const auto& nodes = tree.nodes();
    for (size_t n = 1; n < nodes.size(); ++n) {
      if (tree.value(static_cast<uint32_t>(n), kSamplesValue) == 0) continue;
      std::vector<std::string> path;
      for (size_t cur = n; cur != 0; cur = nodes[cur].parent) {
        const FrameRecord& f = p.frames.at(nodes[cur].frame);
        if (f.kind == FrameKind::kKernel) continue;
        path.push_back(f.symbol.empty() ? "[unknown]" : f.symbol);
      }
      std::reverse(path.begin(), path.end());
      c.samples += tree.value(static_cast<uint32_t>(n), kSamplesValue);
      // A stripped binary's own _start has no name: then libc's entry is second.
      if ((!path.empty() && IsThreadStart(path[0])) || (path.size() > 1 && IsThreadStart(path[1])))
        c.complete += tree.value(static_cast<uint32_t>(n), kSamplesValue);
      c.stacks[path] += tree.value(static_cast<uint32_t>(n), kSamplesValue);
    }
  }
  return c;
}

Profile RecordCommand(const TempDir& tmp, const std::string& mode,
                      const std::vector<std::string>& command, const std::string& name,
                      const std::vector<std::string>& options = {}) {
  const std::string db = tmp.path(name + "-" + mode + ".db");
  std::vector<std::string> argv = {kArcprof, "record", "-q", "--call-graph", mode, "-o", db};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  Subprocess rec(argv);
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  return LoadCapture(db);
}

// Samples whose user stack contains `a` before (outside of) `b`, and the total with `b`.
std::pair<uint64_t, uint64_t> CallerBefore(const Completeness& c, const std::vector<std::string>& chain,
                                           const std::string& leaf) {
  uint64_t with_leaf = 0, with_chain = 0;
  for (const auto& [path, n] : c.stacks) {
    auto at = std::find(path.begin(), path.end(), leaf);
    if (at == path.end()) continue;
    with_leaf += n;
    auto it = path.begin();
    bool ok = true;
    for (const std::string& want : chain) {
      // Prefix match: libc names qsort's body qsort_r.
      it = std::find_if(it, at, [&](const std::string& f) { return f.rfind(want, 0) == 0; });
      if (it == at) {
        ok = false;
        break;
      }
    }
    if (ok) with_chain += n;
  }
  return {with_chain, with_leaf};
}

bool HasFrameSetup(const std::string& binary, const std::string& function) {
  auto [code, text] = RunCapture({"/usr/bin/objdump", "-d", "--no-show-raw-insn", binary});
  const size_t at = text.find("<" + function + ">:");
  if (at == std::string::npos) return false;
  return text.substr(at, 160).find("push   %rbp") != std::string::npos;
}

class UnwindModes : public ::testing::TestWithParam<std::string> {};

// Debian's sqlite3 (no frame pointers) in a recursive CTE: its hot functions
// have several exits, whose CFI uses DW_CFA_remember_state/restore_state, and
// elfutils reports row ranges there that span rows with other rules. Rules
// cached over those ranges cut ~1% of stacks right above the leaf.
TEST_P(UnwindModes, StockSqlite3StacksAreComplete) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  if (access("/usr/bin/sqlite3", X_OK) != 0) {
    if (InCi()) FAIL() << "sqlite3 is not installed (CI=true: must not skip)";
    GTEST_SKIP() << "sqlite3 is not installed (Debian package sqlite3)";
  }
  TempDir tmp;
  Profile p = RecordCommand(tmp, GetParam(),
                            {"/usr/bin/sqlite3", ":memory:",
                             "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c "
                             "WHERE x < 6000000) SELECT sum(x*x % 7), count(*) FROM c;"},
                            "sqlite3");
  Completeness c = Measure(p, "sqlite3");
  ASSERT_GT(c.samples, 500u);
  EXPECT_GE(c.share(), 0.99) << c.complete << " of " << c.samples;
  const auto unmapped = p.counters.find("truncated_stacks.unmapped memory");
  const int64_t n = unmapped == p.counters.end() ? 0 : unmapped->second;
  EXPECT_LE(static_cast<double>(n), 0.003 * static_cast<double>(c.samples))
      << n << " stacks cut as unmapped memory";
}

// gcc's CFI keeps "rbp saved at CFA-N" after an epilogue's `pop %rbp`: that
// slot is below the stack pointer then and the caller's rbp is already in
// rbp. Samples in those epilogues (most of f's here) must still reach main.
TEST_P(UnwindModes, EpilogueAfterPopRbpReachesMain) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  Profile p = RecordCommand(tmp, GetParam(), {kPrograms + "/epilogue", "1000000000"}, "epilogue");
  uint64_t samples = 0, with_main = 0, in_f = 0;
  for (const auto& [path, n] : Measure(p, "epilogue").stacks) {
    samples += n;
    if (std::find(path.begin(), path.end(), "main") != path.end()) with_main += n;
    if (!path.empty() && path.back() == "f") in_f += n;
  }
  ASSERT_GT(samples, 300u);
  EXPECT_GT(in_f, samples / 5) << "the leaf f should hold a good part of the samples";
  EXPECT_GE(static_cast<double>(with_main), 0.99 * static_cast<double>(samples))
      << with_main << " of " << samples << " samples reach main";
}

TEST_P(UnwindModes, StockPython3StacksAreComplete) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  Profile p = RecordCommand(tmp, GetParam(),
                            {"/usr/bin/python3", "-c",
                             "import time\n"
                             "def f(n):\n    s = 0\n    for i in range(n): s += i * i\n    return s\n"
                             "t = time.time()\n"
                             "while time.time() - t < 2: f(100000)\n"},
                            "python");
  Completeness c = Measure(p, "python3");
  ASSERT_GT(c.samples, 500u);
  EXPECT_GE(c.share(), 0.95) << c.complete << " of " << c.samples;
  // The evaluation loop, or the Python frames it runs in its place
  // (docs/python.md: `<module>` above `f` once the process is recognized).
  uint64_t eval = 0;
  for (const auto& [path, n] : c.stacks) {
    for (const std::string& f : path) {
      if (f.find("_PyEval_EvalFrameDefault") != std::string::npos || f == "<module>") {
        eval += n;
        break;
      }
    }
  }
  EXPECT_GE(eval, c.samples * 9 / 10) << "python's evaluation loop should be on most stacks";
}

TEST_P(UnwindModes, StockGzipStacksAreComplete) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string input = tmp.path("input.txt");
  {
    std::ofstream out(input);
    uint64_t x = 1;
    for (int i = 0; i < 3000000; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      out << (x >> 40) << (i % 7 ? ' ' : '\n');
    }
  }
  Profile p = RecordCommand(tmp, GetParam(), {"/usr/bin/gzip", "-k", "-9", "-f", input}, "gzip");
  Completeness c = Measure(p, "gzip");
  ASSERT_GT(c.samples, 300u);
  EXPECT_GE(c.share(), 0.95) << c.complete << " of " << c.samples;
  // Debian strips gzip and its debug symbols (gzip-dbgsym) come from the
  // debian-debug archive, which this machine cannot reach: gzip's own frames
  // are unnamed. What must hold is depth: deflate's call chain inside gzip
  // under libc's entry, not just the leaf.
  uint64_t deep = 0;
  for (const auto& [path, n] : c.stacks) {
    size_t gzip_frames = 0;
    for (const std::string& f : path) gzip_frames += f == "[unknown]" || f.find("gzip") != std::string::npos;
    const bool under_libc = std::any_of(path.begin(), path.end(), [](const std::string& f) {
      return f.rfind("__libc_start_call_main", 0) == 0;
    });
    if (under_libc && gzip_frames >= 4) deep += n;
  }
  EXPECT_GE(deep, c.samples * 8 / 10) << "gzip's call chain (at least 3 frames under main)";
}

TEST_P(UnwindModes, QsortComparatorShowsItsCallers) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  Profile p = RecordCommand(tmp, GetParam(), {kPrograms + "/qsort_cmp", "2"}, "qsort");
  Completeness c = Measure(p, "qsort_cmp");
  auto [with_chain, with_leaf] = CallerBefore(c, {"main", "sort_rounds", "qsort"}, "cmp_heavy");
  ASSERT_GT(with_leaf, 500u);
  EXPECT_GE(with_chain, with_leaf * 95 / 100) << with_chain << " of " << with_leaf;
}

TEST_P(UnwindModes, ProgramWithoutFramePointers) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ASSERT_FALSE(HasFrameSetup(kPrograms + "/deep_calls_nofp", "level_two"));
  TempDir tmp;
  Profile p = RecordCommand(tmp, GetParam(), {kPrograms + "/deep_calls_nofp", "2"}, "nofp");
  Completeness c = Measure(p, "deep_calls_nofp");
  auto [with_chain, with_leaf] =
      CallerBefore(c, {"main", "level_one", "level_two", "level_three"}, "burn");
  ASSERT_GT(with_leaf, 500u);
  EXPECT_GE(with_chain, with_leaf * 95 / 100) << with_chain << " of " << with_leaf;
  EXPECT_GE(c.share(), 0.95);
}

int64_t Counter(const Profile& p, const std::string& name) {
  auto it = p.counters.find(name);
  return it == p.counters.end() ? 0 : it->second;
}

// Samples of deep_recursion whose user stack keeps both ends around one
// "[frames elided]" marker: thread start and `outer` above it, recurse on
// both sides of it. Checks every other property of a kept deep stack too.
void ExpectBothEnds(const Profile& p, const std::string& outer) {
  Completeness c = Measure(p, "deep_recursion");
  ASSERT_GT(c.samples, 500u);
  uint64_t both_ends = 0;
  size_t longest = 0;
  for (const auto& [path, n] : c.stacks) {
    longest = std::max(longest, path.size());
    auto marker = std::find(path.begin(), path.end(), std::string(kElidedFramesName));
    if (marker == path.end() || marker == path.begin() || marker + 1 == path.end()) continue;
    const bool outside = path.size() > 4 && IsThreadStart(path[0]) &&
                         std::find(path.begin(), marker, outer) != marker;
    if (outside && *(marker - 1) == "recurse" && *(marker + 1) == "recurse") both_ends += n;
  }
  // For the spread over runs (docs/performance.md): shares in 1/100,000.
  ::testing::Test::RecordProperty("thread_start_per100k", static_cast<int>(100000 * c.complete / c.samples));
  ::testing::Test::RecordProperty("both_ends_per100k", static_cast<int>(100000 * both_ends / c.samples));
  EXPECT_GE(static_cast<double>(both_ends), 0.97 * static_cast<double>(c.samples))
      << both_ends << " of " << c.samples << " samples keep " << outer << " and the leaf around the marker";
  // The goal is 99% (docs/performance.md); 0.98 is below the worst of ten
  // runs per mode and test (99.80%; before the vDSO's CFI was used, dwarf
  // gave 98.6-99.0% here and 98.9% on another machine).
  EXPECT_GE(c.share(), 0.98) << c.complete << " of " << c.samples << " reach thread start";
  EXPECT_LE(longest, 513u) << "256 inner + marker + 256 outer frames";
  const int64_t elided = Counter(p, "deep_stacks.middle_elided");
  EXPECT_GE(static_cast<double>(elided), 0.97 * static_cast<double>(c.samples));
  if (elided > 0) {
    // Thread start .. main or run, 3,001 recurse, burn (and a leaf below it): ~3,006 - 512.
    const int64_t per_stack = Counter(p, "deep_stacks.frames_elided") / elided;
    EXPECT_GE(per_stack, 2450);
    EXPECT_LE(per_stack, 2550);
  }
}

// main -> 3,000 frames of recurse (64 bytes each: about 190 KiB, past the
// default 64 KiB copy and the 512 frames a sample keeps) -> burn, without
// frame pointers. The main thread's stack is copied down to its base, the
// walk reaches _start, and each sample keeps its 256 innermost and 256
// outermost frames around one "[frames elided]" marker. Given --stack-kb 64,
// the copy is 64 KiB and the same stacks are cut, counted as "stack copy too
// small" (about 1,000 frames deep, their middle elided the same way).
TEST_P(UnwindModes, DeepRecursionKeepsBothEnds) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const std::string program = kPrograms + "/deep_recursion";
  ASSERT_FALSE(HasFrameSetup(program, "recurse"));
  TempDir tmp;
  ExpectBothEnds(RecordCommand(tmp, GetParam(), {program, "2", "3000"}, "deep"), "main");

  Profile q = RecordCommand(tmp, GetParam(), {program, "2", "3000"}, "deep64", {"--stack-kb", "64"});
  Completeness d = Measure(q, "deep_recursion");
  ASSERT_GT(d.samples, 500u);
  EXPECT_LE(d.share(), 0.03) << d.complete << " of " << d.samples << " reach thread start";
  EXPECT_GE(static_cast<double>(Counter(q, "truncated_stacks.stack copy too small")),
            0.97 * static_cast<double>(d.samples));
  size_t longest_cut = 0;
  for (const auto& [path, n] : d.stacks) longest_cut = std::max(longest_cut, path.size());
  EXPECT_LE(longest_cut, 513u) << "a cut stack of 1,000 frames is kept like a whole one";
}

// The same recursion in a second thread: its stack (glibc's) ends below the
// thread pointer, and the copy goes down to there.
TEST_P(UnwindModes, DeepRecursionInAThreadKeepsBothEnds) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  ExpectBothEnds(RecordCommand(tmp, GetParam(), {kPrograms + "/deep_recursion", "2", "3000", "thread"},
                               "deep-thread"),
                 "run");
}

INSTANTIATE_TEST_SUITE_P(Modes, UnwindModes, ::testing::Values("hybrid", "dwarf"));

// A leaf without its own frame: frame pointers alone would give main;leaf.
class LeafRepair : public ::testing::TestWithParam<std::string> {};

TEST_P(LeafRepair, FramelessLeafKeepsItsCaller) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const std::string prog = kPrograms + "/frameless_leaf";
  ASSERT_FALSE(HasFrameSetup(prog, "leaf")) << "the leaf should have no frame of its own";
  ASSERT_TRUE(HasFrameSetup(prog, "mid"));
  TempDir tmp;
  Profile p = RecordCommand(tmp, GetParam(), {prog, "2"}, "leaf");
  Completeness c = Measure(p, "frameless_leaf");
  auto [with_chain, with_leaf] = CallerBefore(c, {"main", "mid"}, "leaf");
  ASSERT_GT(with_leaf, 500u);
  EXPECT_GE(with_chain, with_leaf * 98 / 100) << with_chain << " of " << with_leaf;
}

INSTANTIATE_TEST_SUITE_P(Modes, LeafRepair, ::testing::Values("fp", "hybrid", "dwarf"));

// A program that lives in CPU-time clock calls: the vDSO makes a system call
// for them, so most samples are taken in the kernel below a
// __vdso_clock_gettime frame. The vDSO's own unwind tables (arcprof's copy
// of the image, the same in every process) carry the walk on to main.
// The goal is 99% (docs/performance.md, Unwinding); the threshold is set
// with margin below the worst of ten runs per mode (99.84%).
constexpr double kVdsoMainShare = 0.98;

class VdsoUnwind : public ::testing::TestWithParam<std::string> {};

TEST_P(VdsoUnwind, CpuTimeClockCallsReachMain) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  Profile p = RecordCommand(tmp, GetParam(), {kPrograms + "/vdso_clocks", "2"}, "vdso");
  const Completeness c = Measure(p, "vdso_clocks");
  const uint64_t samples = c.samples;
  uint64_t with_main = 0;
  for (const auto& [path, n] : c.stacks)
    if (std::find(path.begin(), path.end(), "main") != path.end()) with_main += n;
  // fp mode cannot see read_clocks: libc's clock_gettime wrapper keeps no
  // frame, so the frame-pointer chain goes from it to read_clocks' caller.
  const auto [vdso_with_chain, in_vdso] =
      CallerBefore(c, GetParam() == "fp" ? std::vector<std::string>{"main", "clock_work"}
                                         : std::vector<std::string>{"main", "clock_work", "read_clocks"},
                   "__vdso_clock_gettime");
  ASSERT_GT(samples, 300u);
  RecordProperty("main_per100k", static_cast<int>(100000 * with_main / samples));
  RecordProperty("vdso_chain_per100k", static_cast<int>(in_vdso ? 100000 * vdso_with_chain / in_vdso : 0));
  EXPECT_GE(in_vdso, samples / 2) << "most samples should be taken below the vDSO";
  EXPECT_GE(static_cast<double>(with_main), kVdsoMainShare * static_cast<double>(samples))
      << with_main << " of " << samples << " samples reach main";
  EXPECT_GE(static_cast<double>(vdso_with_chain), kVdsoMainShare * static_cast<double>(in_vdso))
      << vdso_with_chain << " of " << in_vdso << " samples in the vDSO keep their callers";
}

INSTANTIATE_TEST_SUITE_P(Modes, VdsoUnwind, ::testing::Values("fp", "hybrid", "dwarf"));

// Samples taken in a signal handler (SIGPROF on a CPU-time timer, a handler
// that spins, as a sampling profiler's would): the kernel's signal frame sits
// between the handler and the code the signal interrupted. The walk goes
// through it with the trampoline's CFI, and the trampoline, which the
// handler returns to at its first byte, and the interrupted frame are looked
// up at their own address, not at the byte before (glibc's __restore_rt is
// preceded by a nop outside every symbol): spin_handler <- __restore_rt <-
// interrupted_loop (or what it called) <- work <- main <- thread start.
// Before, 0 of ~750 handler samples per run named the trampoline (it was
// [libc.so.6+0x3c04f]).
// Threshold: every run of ten per mode gave 100%.
constexpr double kSignalChainShare = 0.97;

class SignalUnwind : public ::testing::TestWithParam<std::string> {};

TEST_P(SignalUnwind, HandlerShowsTrampolineAndInterruptedCallers) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  Profile p = RecordCommand(tmp, GetParam(), {kPrograms + "/signal_spin", "3"}, "signal");
  const Completeness c = Measure(p, "signal_spin");
  uint64_t trampoline = 0;
  for (const auto& [path, n] : c.stacks)
    if (path.size() > 1 && path.back() == "spin_handler" && path[path.size() - 2] == "__restore_rt") trampoline += n;
  const auto [full, in_handler] = CallerBefore(c, {"main", "work", "interrupted_loop", "__restore_rt"}, "spin_handler");
  ASSERT_GT(c.samples, 500u);
  ASSERT_GT(in_handler, c.samples / 20) << "the handler should hold a good part of the samples";
  RecordProperty("handler_samples", static_cast<int>(in_handler));
  RecordProperty("trampoline_per100k", static_cast<int>(100000 * trampoline / in_handler));
  RecordProperty("full_per100k", static_cast<int>(100000 * full / in_handler));
  EXPECT_GE(static_cast<double>(trampoline), kSignalChainShare * static_cast<double>(in_handler))
      << trampoline << " of " << in_handler << " handler samples show __restore_rt above it";
  // fp mode: the leaf repair's CFI step finds the trampoline above the
  // frameless handler; the frame-pointer walk does not go on through the
  // signal frame (nor through this program's frameless functions).
  if (GetParam() == "fp") return;
  EXPECT_GE(static_cast<double>(full), kSignalChainShare * static_cast<double>(in_handler))
      << full << " of " << in_handler << " handler samples keep main;work;interrupted_loop above the trampoline";
  EXPECT_GE(c.share(), kSignalChainShare) << c.complete << " of " << c.samples << " reach thread start";
}

INSTANTIATE_TEST_SUITE_P(Modes, SignalUnwind, ::testing::Values("fp", "hybrid", "dwarf"));

TEST(UnwindJava, HybridStacksThroughJitFramesAreComplete) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const std::string jdk = "/usr/lib/jvm/java-17-openjdk-amd64";
  if (!std::filesystem::exists(jdk + "/bin/javac")) {
    if (InCi()) FAIL() << "openjdk-17 is missing (CI=true must not skip)";
    GTEST_SKIP() << "no openjdk-17 JDK at " << jdk;
  }
  TempDir tmp;
  auto [code, out] = RunCapture({jdk + "/bin/javac", "-d", tmp.dir(), ARCPROF_JAVA_SOURCES "/BusyLoop.java"});
  ASSERT_EQ(code, 0);
  Profile p = RecordCommand(tmp, "hybrid",
                            {jdk + "/bin/java", "-XX:+PreserveFramePointer", "-cp", tmp.dir(),
                             "BusyLoop", "4"},
                            "java");
  // The busiest thread runs main's JIT-compiled loop.
  std::map<uint32_t, uint64_t> by_tid;
  for (size_t t = 0; t < p.threads.size(); ++t) by_tid[p.threads[t].tid] += p.threads[t].tree.total();
  auto busiest = std::max_element(by_tid.begin(), by_tid.end(),
                                  [](auto& a, auto& b) { return a.second < b.second; });
  ASSERT_NE(busiest, by_tid.end());
  uint64_t samples = 0, complete = 0, jit = 0;
  for (size_t t = 0; t < p.threads.size(); ++t) {
    if (p.threads[t].tid != busiest->first) continue;
    const CallTree& tree = p.threads[t].tree;
    const auto& nodes = tree.nodes();
    for (size_t n = 1; n < nodes.size(); ++n) {
      if (tree.value(static_cast<uint32_t>(n), kSamplesValue) == 0) continue;
      samples += tree.value(static_cast<uint32_t>(n), kSamplesValue);
      std::string root;
      bool has_jit = false;
      for (size_t cur = n; cur != 0; cur = nodes[cur].parent) {
        const FrameRecord& f = p.frames.at(nodes[cur].frame);
        if (f.kind == FrameKind::kKernel) continue;
        has_jit = has_jit || f.kind == FrameKind::kJit;
        root = f.symbol;
      }
      if (IsThreadStart(root)) complete += tree.value(static_cast<uint32_t>(n), kSamplesValue);
      if (has_jit) jit += tree.value(static_cast<uint32_t>(n), kSamplesValue);
    }
  }
  // 4 s of one busy thread is ~4,000 samples on an idle machine; under a load of
  // 14 it got 1,042. The ratios below are the test; this only asks for enough
  // samples to make them mean something.
  ASSERT_GT(samples, 400u);
  EXPECT_GE(jit, samples / 2) << "most samples should run JIT code";
  EXPECT_GE(complete, samples * 95 / 100) << complete << " of " << samples;
}

}  // namespace
}  // namespace arcprof::testing
