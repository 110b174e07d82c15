// CPython named with no flag: real interpreters (Debian's python3.11,
// pyenv's 3.11-3.13) recorded with `record -- pythonX split.py`, their Python
// frames read in BPF and put in place of _PyEval_EvalFrameDefault.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include "tests/loader/runtime_util.h"
#include "tests/runtimes/runtime_stacks.h"
#include "tests/runtimes/python_interpreters.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kProgram = std::string(ARCPROF_PY_PROGRAMS) + "/split.py";
const std::string kBlockProgram = std::string(ARCPROF_PY_PROGRAMS) + "/block.py";

std::vector<SampledStack> UserStacks(const Profile& p, std::string_view program = "split.py") {
  return ProgramStacks(p, program, ".py", FrameKind::kPython);
}

SplitMeasures Measure(const Profile& p) { return MeasureSplit(UserStacks(p), "<module>"); }

std::string Describe(const Profile& p) { return DescribeStacks(p, UserStacks(p), "[py]", {"python.", "runtimes."}); }

Profile Record(const TempDir& tmp, const Interpreter& py, const std::vector<std::string>& args,
               const std::string& program = kProgram) {
  const std::string db = tmp.path(py.label + ".db");
  std::vector<std::string> argv = {kArcprof, "record", "-q", "-o", db, "--", py.binary, program};
  argv.insert(argv.end(), args.begin(), args.end());
  Subprocess rec(argv);
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  return LoadCapture(db);
}

class PythonNoFlag : public ::testing::TestWithParam<Interpreter> {};
// The interpreters that have -X perf (3.12+): the others are not given the
// test at all rather than skipping it.
class PythonPerfFlag : public ::testing::TestWithParam<Interpreter> {};
std::vector<Interpreter> PerfFlagInterpreters() {
  std::vector<Interpreter> out;
  for (const Interpreter& py : Interpreters()) {
    if (py.major == 3 && py.minor >= 12) out.push_back(py);
  }
  return out;
}

#define REQUIRE_INTERPRETER(py)                                                          \
  do {                                                                                   \
    ARCPROF_REQUIRE_RECORD_CAPABLE();                                                    \
    if ((py).binary.empty()) GTEST_SKIP() << (py).label << " is not installed on this machine"; \
  } while (0)

// The 3:1 split and complete chains, from the process's own frames.
TEST_P(PythonNoFlag, SplitAndFullChains) {
  const Interpreter& py = GetParam();
  REQUIRE_INTERPRETER(py);
  TempDir tmp;
  Profile p = Record(tmp, py, {"cpu=3"});
  const SplitMeasures m = Measure(p);
  printf("measured %s split %.4f full %.4f python %llu\n", py.label.c_str(), m.split(), m.full_share(),
         static_cast<unsigned long long>(m.main));
  ASSERT_GT(m.main, 200u) << Describe(p);
  // 40 runs (10 per interpreter) on the loaded build machine: split
  // 0.638-0.767 (39 of 40 within 0.712-0.767), full chains 0.982-1.000.
  // 3.7-3.10, 10 runs each at load 14-24: split 0.725-0.805, full
  // 0.983-1.000.
  // The goals are 2 points and 97% (docs/performance.md); these thresholds
  // guard against regressions with margin below the worst run.
  EXPECT_NEAR(m.split(), 0.75, 0.15) << m.alpha << " alpha, " << m.beta << " beta\n" << Describe(p);
  EXPECT_GE(m.full_share(), 0.95) << m.full << " of " << m.main << "\n" << Describe(p);
}

// A threading.Thread has its own chain (side -> gamma, from its own thread
// start), and the main thread's chain is not mixed into it.
TEST_P(PythonNoFlag, SecondThreadHasItsOwnChain) {
  const Interpreter& py = GetParam();
  REQUIRE_INTERPRETER(py);
  TempDir tmp;
  Profile p = Record(tmp, py, {"cpu=3", "thread"});
  const SplitMeasures m = Measure(p);
  printf("measured %s thread side %.4f full %.4f side %llu\n", py.label.c_str(),
         m.side ? static_cast<double>(m.side_full) / m.side : 0.0, m.full_share(),
         static_cast<unsigned long long>(m.side));
  ASSERT_GT(m.main, 150u) << Describe(p);
  ASSERT_GT(m.side, 150u) << Describe(p);
  // 40 runs: the thread's own chain 0.979-1.000, the main thread's 0.982-1.000.
  // 3.7-3.10, 10 runs each at load 14-24: the thread's 0.976-1.000, the
  // main thread's 0.981-1.000.
  EXPECT_GE(static_cast<double>(m.side_full) / m.side, 0.95) << m.side_full << " of " << m.side << "\n" << Describe(p);
  EXPECT_EQ(m.side_with_main, 0u) << Describe(p);
  EXPECT_GE(m.full_share(), 0.95) << m.full << " of " << m.main << "\n" << Describe(p);
}

// Off CPU: block.py's alpha and beta sleep alike, three times for one; the
// time off CPU splits 3:1 under the same complete chains as CPU samples
// (the off-CPU program runs the sampler's walk at the switch).
TEST_P(PythonNoFlag, OffCpuSplitAndFullChains) {
  const Interpreter& py = GetParam();
  REQUIRE_INTERPRETER(py);
  TempDir tmp;
  const std::string db = tmp.path(py.label + "-offcpu.db");
  Subprocess rec({kArcprof, "record", "-q", "--off-cpu", "-o", db, "--", py.binary, kBlockProgram, "2"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  // The program's own frames (not site.py's, whose imports block at startup).
  const auto stacks = ProgramStacks(p, "block.py", "block.py", FrameKind::kPython, 0, "offcpu");
  const SplitMeasures m = MeasureSplit(stacks, "<module>");
  printf("measured %s offcpu split %.4f full %.4f python %.3f s\n", py.label.c_str(), m.split(), m.full_share(),
         static_cast<double>(m.main) / 1e9);
  const std::string described = DescribeStacks(p, stacks, "[py]", {"python.", "runtimes.", "offcpu"});
  // Of 2 s, most is spent in time.sleep.
  ASSERT_GT(m.main, 1'000'000'000u) << described;
  // 10-20 runs per interpreter (3.7-3.13, 111 runs; 2.7 and 3.6 one each) on the loaded
  // build machine (load 10-20 on 2 cores): split 0.680-0.895, full chains
  // 1.000 (0.960-1.000 when site.py's frames counted as the program's). The
  // time off CPU includes the wait for a CPU after each wakeup, which a
  // loaded machine makes uneven (one long wait moves a 2 s run's split by
  // points); these thresholds guard against regressions with margin beyond
  // the worst run.
  EXPECT_NEAR(m.split(), 0.75, 0.20) << m.alpha << " ns alpha, " << m.beta << " ns beta\n" << described;
  EXPECT_GE(m.full_share(), 0.95) << m.full << " of " << m.main << " ns\n" << described;
}

// Line numbers: hot()'s two lines (three calls of sum() and one) each get
// their own share, from the line table at the frame's instruction.
TEST_P(PythonNoFlag, TwoHotLinesEachGetTheirShare) {
  const Interpreter& py = GetParam();
  REQUIRE_INTERPRETER(py);
  TempDir tmp;
  const std::string program = std::string(ARCPROF_PY_PROGRAMS) + "/lines.py";
  const uint32_t line_a = LineOf(program, "# line A"), line_b = LineOf(program, "# line B");
  ASSERT_GT(line_a, 0u);
  Profile p = Record(tmp, py, {"cpu=3"}, program);
  uint64_t a = 0, b = 0, other = 0;
  for (const SampledStack& s : UserStacks(p, "lines.py")) {
    const StackFrame* leaf = nullptr;
    for (const StackFrame& f : s.frames) {
      if (f.runtime) leaf = &f;
    }
    if (leaf == nullptr || leaf->name != "hot") continue;
    (leaf->line == line_a ? a : leaf->line == line_b ? b : other) += s.n;
  }
  const double share = a + b ? static_cast<double>(a) / (a + b) : 0;
  printf("measured %s lines A %.4f (%llu A, %llu B, %llu other)\n", py.label.c_str(), share,
         static_cast<unsigned long long>(a), static_cast<unsigned long long>(b), static_cast<unsigned long long>(other));
  ASSERT_GT(a + b, 150u) << Describe(p);
  // 10 runs per interpreter (80 in all) at load 14-24, 3 s of wall time
  // each: 0.698-0.829 per run, pooled 0.740-0.766 per interpreter
  // (docs/performance.md, "Python"). The goal is 3 points (pooled); this
  // guards with margin beyond the worst run.
  EXPECT_NEAR(share, 0.75, 0.13) << Describe(p);
}

// A process already running when the recording starts (-p, and so a whole
// machine: the same snapshot) is recognized from its mappings and named.
TEST_P(PythonNoFlag, RunningProcessIsNamed) {
  const Interpreter& py = GetParam();
  REQUIRE_INTERPRETER(py);
  TempDir tmp;
  // Long enough for arcprof to load and attach on a loaded machine (seconds);
  // killed when the test ends.
  Subprocess target({py.binary, kProgram, "60"}, false);
  usleep(1'000'000);  // started, running drive()
  const std::string db = tmp.path(py.label + "-p.db");
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "-d", "3", "-p", std::to_string(target.pid())});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  const SplitMeasures m = Measure(p);
  printf("measured %s running split %.4f full %.4f python %llu\n", py.label.c_str(), m.split(), m.full_share(),
         static_cast<unsigned long long>(m.main));
  // 10 runs per interpreter at load 14-24: split 0.712-0.800, full
  // 0.976-1.000, 229-1,439 samples (3 s of a loaded machine).
  ASSERT_GT(m.main, 150u) << Describe(p);
  EXPECT_NEAR(m.split(), 0.75, 0.15) << Describe(p);
  EXPECT_GE(m.full_share(), 0.95) << m.full << " of " << m.main << "\n" << Describe(p);
}

// python -X perf (3.12+): its perf-map trampolines, in an interpreter built
// without frame pointers, are stepped by their fixed frame and the walk goes
// on with CFI: the same complete chains as with no flag, no stack starting
// at a trampoline.
TEST_P(PythonPerfFlag, PerfTrampolinesDoNotEndTheWalk) {
  const Interpreter& py = GetParam();
  REQUIRE_INTERPRETER(py);
  TempDir tmp;
  const std::string db = tmp.path(py.label + "-perf.db");
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", py.binary, "-X", "perf", kProgram, "cpu=3"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  const SplitMeasures m = Measure(p);
  uint64_t trampolines = 0, from_trampoline = 0;
  for (const SampledStack& s : UserStacks(p)) {
    bool any = false;
    for (const StackFrame& f : s.frames) any = any || f.name.rfind("py::", 0) == 0;
    if (any) trampolines += s.n;
    if (!s.frames.empty() && s.frames[0].name.rfind("py::", 0) == 0) from_trampoline += s.n;
  }
  const double cut = trampolines ? static_cast<double>(from_trampoline) / trampolines : 1;
  printf("measured %s -X perf split %.4f full %.4f python %llu trampolines %llu cut %.4f\n", py.label.c_str(),
         m.split(), m.full_share(), static_cast<unsigned long long>(m.main),
         static_cast<unsigned long long>(trampolines), cut);
  ASSERT_GT(m.main, 200u) << Describe(p);
  EXPECT_GT(trampolines, m.main / 2) << "the perf map was not used\n" << Describe(p);
  // The walks that still stop at a trampoline: a leaf in a PLT stub, whose
  // CFI is an expression, goes to libdwfl, which cannot step the trampoline
  // (docs/python.md). 10 runs each of 3.12 and 3.13 at load 6-9 (cpu=3,
  // 2,500-2,960 samples): cut 0.000-0.014, split 0.725-0.768, full chains
  // 0.972-0.991.
  EXPECT_LE(cut, 0.05) << Describe(p);
  EXPECT_NEAR(m.split(), 0.75, 0.15) << Describe(p);
  EXPECT_GE(m.full_share(), 0.90) << m.full << " of " << m.main << "\n" << Describe(p);
}

// A "python3.11" exporting CPython's symbols over corrupt frame chains: a
// chain that loops, one into unmapped memory, code pointers to objects that
// are not code objects. The walk stops at its bound with a counted reason,
// nothing is named, the recording ends normally and on time. "2.7:" the
// same chains in a "python2.7" (2.7's layout and root).
class HostilePython : public ::testing::TestWithParam<std::string> {};

TEST_P(HostilePython, CorruptChainsAreBoundedAndCounted) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("fake.db");
  const auto t0 = std::chrono::steady_clock::now();
  const bool two = GetParam().starts_with("2.7:");
  const std::string mode = two ? GetParam().substr(4) : GetParam();
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", two ? ARCPROF_FAKE_PYTHON27 : ARCPROF_FAKE_PYTHON, mode, "2"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  Profile p = LoadCapture(db);
  EXPECT_EQ(Counter(p, "python.processes_recognized"), 1);
  EXPECT_EQ(Counter(p, "python.frames_named"), 0);
  EXPECT_GT(Counter(p, "runtimes.samples"), 100);
  if (mode == "loop") {
    EXPECT_EQ(Counter(p, "runtimes.truncated_walks.max depth"), Counter(p, "runtimes.samples"));
  } else if (mode == "fault") {
    EXPECT_EQ(Counter(p, "runtimes.truncated_walks.read fault"), Counter(p, "runtimes.samples"));
  } else {
    EXPECT_EQ(Counter(p, "runtimes.walks.complete"), Counter(p, "runtimes.samples"));
  }
  // Frames it could not name are counted, not invented.
  EXPECT_GT(Counter(p, "python.frames_code_gone"), 0);
  for (const FrameRecord& f : p.frames.all()) {
    if (f.kind == FrameKind::kPython) EXPECT_TRUE(f.symbol.empty()) << f.symbol;
  }
}

INSTANTIATE_TEST_SUITE_P(Chains, HostilePython,
                         ::testing::Values("loop", "fault", "garbage", "2.7:loop", "2.7:fault", "2.7:garbage"));

// A binary named python3.11 that is not CPython (a copy of dash): not
// recognized, recorded as any program.
TEST(HostilePythonName, NotCPythonIsLeftAlone) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ExpectImpostorLeftAlone(kArcprof, "python3.11", "python.processes_recognized");
}

std::string InterpreterTestName(const ::testing::TestParamInfo<Interpreter>& info) {
  std::string name = info.param.label;
  std::replace(name.begin(), name.end(), '-', '_');
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonNoFlag, ::testing::ValuesIn(Interpreters()), InterpreterTestName);
INSTANTIATE_TEST_SUITE_P(Interpreters, PythonPerfFlag, ::testing::ValuesIn(PerfFlagInterpreters()),
                         InterpreterTestName);

}  // namespace
}  // namespace arcprof::testing
