// Java stacks as a whole: a known call chain (Split: interpreted main ->
// compiled drive -> alpha/beta 3:1, and a deep chain d1..d7 with inlining),
// late-attached, with and without -XX:+PreserveFramePointer, on both JDKs;
// a program that stays interpreted (-Xint).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kClasses = JAVA_CLASSES;

struct Case {
  std::string name;
  std::string home;
  bool preserve_fp;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

bool Complete(const std::vector<std::string>& stack) {
  return !stack.empty() && (stack[0] == "clone3" || stack[0] == "clone" || stack[0] == "start_thread");
}

// Index of the first frame named `name`, or -1.
int Find(const std::vector<std::string>& stack, const std::string& name) {
  auto it = std::find(stack.begin(), stack.end(), name);
  return it == stack.end() ? -1 : static_cast<int>(it - stack.begin());
}

bool HasChain(const std::vector<std::string>& stack, const std::vector<std::string>& chain) {
  return std::search(stack.begin(), stack.end(), chain.begin(), chain.end()) != stack.end();
}

struct SplitFigures {
  uint64_t java = 0, full = 0, alpha = 0, beta = 0, skipped = 0;
  uint64_t deep = 0, deep_full = 0, deep_skipped = 0;
  uint64_t interpreter_anonymous = 0;
  int64_t interpreted_named = 0;

  SplitFigures& operator+=(const SplitFigures& o) {
    java += o.java, full += o.full, alpha += o.alpha, beta += o.beta, skipped += o.skipped;
    deep += o.deep, deep_full += o.deep_full, deep_skipped += o.deep_skipped;
    interpreter_anonymous += o.interpreter_anonymous, interpreted_named += o.interpreted_named;
    return *this;
  }
};

// No walk may jump over a frame. One skipped chain in 28,000-80,000 samples
// is still seen now and then in clean-clone runs (temurin-25 with
// PreserveFramePointer, openjdk-17 without), cause not yet found (see
// docs/java.md); a wrong rule skips hundreds to thousands (2,758 of 2,873
// before the sender-sp fix). So: at most one, plus one per 10,000 samples.
void ExpectAlmostNoSkips(const SplitFigures& f, const std::string& label) {
  EXPECT_LE(f.skipped, 1 + f.java / 10000)
      << label << ": " << f.skipped << " of " << f.java << " main-thread samples skip a frame";
  EXPECT_LE(f.deep_skipped, 1 + f.deep / 10000)
      << label << ": " << f.deep_skipped << " of " << f.deep << " deep-thread samples skip a frame";
}

// `callee` anywhere but at the root of a stack must sit right under `caller`:
// otherwise the walk jumped over a frame.
bool Skips(const std::vector<std::string>& stack, const std::string& caller, const std::string& callee) {
  const int at = Find(stack, callee);
  return at > 0 && stack[static_cast<size_t>(at) - 1] != caller;
}

SplitFigures Measure(const Profile& p, pid_t pid) {
  SplitFigures f;
  auto main_thread = [pid](const ThreadRecord& t) { return static_cast<pid_t>(t.pid) == pid && t.comm == "main"; };
  for (const auto& [stack, n] : Stacks(p, main_thread)) {
    const bool java = std::any_of(stack.begin(), stack.end(), [](const std::string& s) { return s.rfind("Split.", 0) == 0; });
    if (!java) continue;
    f.java += n;
    const bool a = HasChain(stack, {"Split.main", "Split.drive", "Split.alpha"});
    const bool b = HasChain(stack, {"Split.main", "Split.drive", "Split.beta"});
    if ((a || b) && Complete(stack)) f.full += n;
    if (Find(stack, "Split.alpha") >= 0) f.alpha += n;
    if (Find(stack, "Split.beta") >= 0) f.beta += n;
    if (Skips(stack, "Split.drive", "Split.alpha") || Skips(stack, "Split.drive", "Split.beta") ||
        Skips(stack, "Split.main", "Split.drive")) {
      f.skipped += n;
    }
    if (Find(stack, "Interpreter") >= 0) f.interpreter_anonymous += n;
  }
  auto deep_thread = [pid](const ThreadRecord& t) { return static_cast<pid_t>(t.pid) == pid && t.comm == "deep"; };
  const std::vector<std::string> chain = {"Split.d1", "Split.d2", "Split.d3", "Split.d4",
                                          "Split.d5", "Split.d6", "Split.d7"};
  for (const auto& [stack, n] : Stacks(p, deep_thread)) {
    if (Find(stack, "Split.d1") < 0 && Find(stack, "Split.work") < 0) continue;
    f.deep += n;
    if (HasChain(stack, chain) && Complete(stack)) f.deep_full += n;
    bool skipped = false;
    for (size_t k = 1; k < chain.size(); ++k) skipped = skipped || Skips(stack, chain[k - 1], chain[k]);
    if (skipped) f.deep_skipped += n;
  }
  f.interpreted_named = p.counters.count("java.interpreted_frames_named") ? p.counters.at("java.interpreted_frames_named") : 0;
  return f;
}

// The 3:1 split is a binomial sample: with n alpha+beta samples its
// standard deviation is sqrt(0.75 * 0.25 / n) (measured over 24 runs of
// ~1,250 samples at 999 Hz: pooled 74.86% of 30,158, the runs' spread 1.17
// points against 1.22 expected: noise, no bias). For 2 points to be 4 sd the
// test needs 7,500 samples: it samples Split at 4999 Hz and records further
// windows of the same JVM until it has them (at most kMaxWindows; a loaded
// machine gives this thread 15-100% of a CPU).
constexpr uint64_t kSplitSamplesWanted = 7500;
constexpr int kMaxWindows = 4;

// Records `pid` (late attach by record -p on the first window) window after
// window until kSplitSamplesWanted alpha+beta samples are in.
SplitFigures RecordSplit(pid_t pid, const std::string& label, int* windows_out = nullptr) {
  SplitFigures total;
  TempDir tmp;
  int windows = 0;
  while (windows < kMaxWindows && total.alpha + total.beta < kSplitSamplesWanted) {
    const std::string db = tmp.path("split" + std::to_string(windows) + ".db");
    Subprocess rec({kArcprof, "record", "-q", "-F", "4999", "-o", db, "-d", "6", "-p", std::to_string(pid)});
    EXPECT_EQ(rec.Wait(), 0) << label << ": " << rec.stderr_text();
    ++windows;
    total += Measure(LoadCapture(db), pid);
  }
  if (windows_out) *windows_out = windows;
  return total;
}

// Within 2 points of 75%, or 4 standard deviations of the sample when a very
// loaded machine left fewer than kSplitSamplesWanted after kMaxWindows.
void ExpectThreeToOne(const SplitFigures& f, const std::string& label) {
  const double n = static_cast<double>(f.alpha + f.beta);
  ASSERT_GT(n, 0) << label;
  const double tolerance = std::max(0.02, 4 * std::sqrt(0.75 * 0.25 / n));
  EXPECT_NEAR(static_cast<double>(f.alpha) / n, 0.75, tolerance)
      << label << ": alpha " << f.alpha << " beta " << f.beta << " (tolerance " << tolerance << ")";
}

const std::vector<std::string> kCompileFlags = {
    "-XX:CompileCommand=quiet",           "-XX:CompileCommand=dontinline,Split::drive",
    "-XX:CompileCommand=dontinline,Split::alpha", "-XX:CompileCommand=dontinline,Split::beta",
    "-XX:CompileCommand=dontinline,Split::work",  "-XX:CompileCommand=dontinline,Split::d2",
    "-XX:CompileCommand=dontinline,Split::d4",    "-XX:CompileCommand=dontinline,Split::d6"};

void RemoveJitFiles(pid_t pid) {
  for (const char* ext : {".dump", ".arcprof"}) unlink(("/tmp/jit-" + std::to_string(pid) + ext).c_str());
}

// Starts Split with `argv` (the command and the JVM's own flags; the compile
// flags and the class are added), waits while drive, alpha and beta are
// compiled, records 5 s of it at 2999 Hz (late attach), kills it. *pid: the
// JVM's, 0 when it did not start.
Profile RecordCompiledSplit(std::vector<std::string> argv, const std::string& name, pid_t* pid) {
  argv.insert(argv.end(), kCompileFlags.begin(), kCompileFlags.end());
  argv.insert(argv.end(), {"-cp", kClasses, "Split", "30"});
  Subprocess jvm(argv);
  if (!jvm.WaitForStderr("split: running", 30)) {
    ADD_FAILURE() << name << ": " << jvm.stderr_text();
    return {};
  }
  *pid = jvm.pid();
  sleep(3);
  TempDir tmp;
  const std::string db = tmp.path(name + ".db");
  Subprocess rec({kArcprof, "record", "-q", "-F", "2999", "-o", db, "-d", "5", "-p", std::to_string(*pid)});
  EXPECT_EQ(rec.Wait(), 0) << name << ": " << rec.stderr_text();
  jvm.Signal(SIGKILL);
  jvm.Wait();
  RemoveJitFiles(*pid);
  return LoadCapture(db);
}

class JavaUnwind : public ::testing::TestWithParam<Case> {};

TEST_P(JavaUnwind, LateAttachedSplitHasFullChainsAndThreeToOne) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const Case c = GetParam();
  const std::string java = c.home + "/bin/java";
  if (access(java.c_str(), X_OK) != 0) {
    if (InCi()) FAIL() << java << " is missing (CI=true: must not skip)";
    GTEST_SKIP() << java << " is not installed";
  }
  std::vector<std::string> argv = {java, c.preserve_fp ? "-XX:+PreserveFramePointer" : "-XX:-PreserveFramePointer",
                                   "-XX:+EnableDynamicAgentLoading"};
  argv.insert(argv.end(), kCompileFlags.begin(), kCompileFlags.end());
  argv.insert(argv.end(), {"-cp", kClasses, "Split", "60"});
  Subprocess jvm(argv);
  ASSERT_TRUE(jvm.WaitForStderr("split: running", 30)) << jvm.stderr_text();
  const pid_t pid = jvm.pid();
  // Warm-up: drive, alpha and beta compiled (C2) before the window.
  sleep(3);
  int windows = 0;
  const SplitFigures f = RecordSplit(pid, c.name, &windows);
  jvm.Signal(SIGKILL);
  jvm.Wait();
  RemoveJitFiles(pid);
  RecordProperty("windows", windows);
  RecordProperty("main_java_samples", static_cast<int>(f.java));
  RecordProperty("main_full_chain_permille", static_cast<int>(f.java ? 1000 * f.full / f.java : 0));
  RecordProperty("deep_full_chain_permille", static_cast<int>(f.deep ? 1000 * f.deep_full / f.deep : 0));
  RecordProperty("alpha_beta_samples", static_cast<int>(f.alpha + f.beta));
  RecordProperty("alpha_permille", static_cast<int>(f.alpha + f.beta ? 1000 * f.alpha / (f.alpha + f.beta) : 0));
  ASSERT_GT(f.java, 200u) << c.name;
  ASSERT_GT(f.deep, 200u) << c.name;
  EXPECT_GE(static_cast<double>(f.full) / static_cast<double>(f.java), 0.95)
      << c.name << ": " << f.full << "/" << f.java << " main-thread samples carry main;drive;alpha|beta";
  ExpectThreeToOne(f, c.name);
  // (A compiled caller of an interpreted callee used to be stepped from the
  // wrong stack pointer: see InterpretedCalleeOfCompiledCode.)
  ExpectAlmostNoSkips(f, c.name);
  EXPECT_GE(static_cast<double>(f.deep_full) / static_cast<double>(f.deep), 0.95)
      << c.name << ": " << f.deep_full << "/" << f.deep << " deep-thread samples carry d1..d7";
  // main stays interpreted: named by its Method*, not "Interpreter".
  EXPECT_LE(static_cast<double>(f.interpreter_anonymous) / static_cast<double>(f.java), 0.02) << c.name;
  EXPECT_GT(f.interpreted_named, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Jdks, JavaUnwind,
    ::testing::Values(Case{"openjdk17_noPFP", JDK17_HOME, false}, Case{"openjdk17_PFP", JDK17_HOME, true},
                      Case{"temurin25_noPFP", TEMURIN_HOME, false}, Case{"temurin25_PFP", TEMURIN_HOME, true}),
    [](const auto& info) { return info.param.name; });

// -Xint: every Java frame is an interpreted one, named by its method.
TEST(JavaUnwindMisc, InterpretedOnlyProgramIsNamedByMethod) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const std::string java = std::string(JDK17_HOME) + "/bin/java";
  Subprocess jvm({java, "-Xint", "-XX:+EnableDynamicAgentLoading", "-cp", kClasses, "Split", "30"});
  ASSERT_TRUE(jvm.WaitForStderr("split: running", 30)) << jvm.stderr_text();
  const pid_t pid = jvm.pid();
  TempDir tmp;
  const std::string db = tmp.path("xint.db");
  Subprocess rec({kArcprof, "record", "-o", db, "-d", "4", "-p", std::to_string(pid)});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  jvm.Signal(SIGKILL);
  jvm.Wait();
  RemoveJitFiles(pid);
  Profile p = LoadCapture(db);
  const SplitFigures f = Measure(p, pid);
  ASSERT_GT(f.java, 200u);
  RecordProperty("named_permille", static_cast<int>(1000 * (f.java - f.interpreter_anonymous) / f.java));
  EXPECT_GE(static_cast<double>(f.java - f.interpreter_anonymous) / static_cast<double>(f.java), 0.95)
      << f.interpreter_anonymous << "/" << f.java << " main-thread samples have an anonymous Interpreter frame";
  EXPECT_GE(static_cast<double>(f.full) / static_cast<double>(f.java), 0.95) << f.full << "/" << f.java;
  ExpectAlmostNoSkips(f, "-Xint");
  for (const FrameRecord& fr : p.frames.all()) {
    if (fr.symbol == "Split.drive") EXPECT_EQ(fr.kind, FrameKind::kInterpreted);
  }
}

// Compiled code calling interpreted code: `work` is never compiled
// (CompileCommand=exclude), so compiled alpha, beta and d6 reach it through
// HotSpot's c2i adapter, which pushes the arguments below the caller's frame.
// The caller's stack pointer is then the interpreter's saved sender sp, not
// the interpreted frame's rbp + 16; stepping from the latter made every such
// walk end or skip frames. The same happens briefly in any JVM after a
// deoptimization, the likely source of the one skipped chain a clean-clone
// run once saw.
TEST(JavaUnwindMisc, InterpretedCalleeOfCompiledCodeKeepsTheChain) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  for (const auto& [label, home] : {std::pair<std::string, std::string>{"openjdk17", JDK17_HOME},
                                    std::pair<std::string, std::string>{"temurin25", TEMURIN_HOME}}) {
    const std::string java = home + "/bin/java";
    if (access(java.c_str(), X_OK) != 0) {
      if (InCi()) ADD_FAILURE() << java << " is missing (CI=true: must not skip)";
      continue;
    }
    pid_t pid = 0;
    Profile p = RecordCompiledSplit({java, "-XX:-PreserveFramePointer", "-XX:+EnableDynamicAgentLoading",
                                     "-XX:CompileCommand=exclude,Split::work"},
                                    "c2i", &pid);
    ASSERT_NE(pid, 0) << label;
    const SplitFigures f = Measure(p, pid);
    ASSERT_GT(f.java, 200u) << label;
    ASSERT_GT(f.deep, 200u) << label;
    bool work_interpreted = false;
    for (const FrameRecord& fr : p.frames.all()) {
      if (fr.symbol == "Split.work" && fr.kind == FrameKind::kInterpreted) work_interpreted = true;
    }
    EXPECT_TRUE(work_interpreted) << label << ": Split.work was compiled after all";
    EXPECT_GE(static_cast<double>(f.full) / static_cast<double>(f.java), 0.95)
        << label << ": " << f.full << "/" << f.java << " main-thread samples carry main;drive;alpha|beta";
    EXPECT_GE(static_cast<double>(f.deep_full) / static_cast<double>(f.deep), 0.95)
        << label << ": " << f.deep_full << "/" << f.deep << " deep-thread samples carry d1..d7";
    ExpectAlmostNoSkips(f, label);
  }
}

// A profiler's signals over compiled Java code: a preloaded library
// (tests/programs/signal_spin.c) runs a spinning SIGPROF handler on a
// CPU-time timer, so a good part of the samples are taken in the handler,
// over the kernel's signal frame, over whatever the thread ran: mostly
// compiled Split.alpha/beta/work, without -XX:+PreserveFramePointer (rbp is
// no frame pointer there). HotSpot's own signals (safepoint polls, implicit
// null checks) leave the same frames. The walk must go through the signal
// frame and on by the compiled frames' sizes to thread start; libdwfl,
// which stepped such walks before, went on through rbp after the
// interrupted frame and lost the callers.
// 0 of 1,152 handler samples reached thread start before; ten runs after
// gave 100% each (531-1,168 handler samples a run).
constexpr double kJavaSignalShare = 0.95;

TEST(JavaUnwindMisc, SignalHandlerOverCompiledJavaReachesThreadStart) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const std::string java = std::string(JDK17_HOME) + "/bin/java";
  if (access(java.c_str(), X_OK) != 0) {
    if (InCi()) FAIL() << java << " is missing (CI=true: must not skip)";
    GTEST_SKIP() << java << " is not installed";
  }
  pid_t pid = 0;
  // env execs java: the same pid.
  Profile p = RecordCompiledSplit({"/usr/bin/env", "LD_PRELOAD=" + std::string(ARCPROF_TEST_PROGRAMS) + "/signal_spin_preload",
                                   java, "-XX:-PreserveFramePointer", "-XX:+EnableDynamicAgentLoading"},
                                  "signal", &pid);
  ASSERT_NE(pid, 0);
  auto split_thread = [pid](const ThreadRecord& t) {
    return static_cast<pid_t>(t.pid) == pid && (t.comm == "main" || t.comm == "deep");
  };
  uint64_t in_handler = 0, over_java = 0, complete = 0;
  for (const auto& [stack, n] : Stacks(p, split_thread)) {
    const int at = Find(stack, "spin_handler");
    if (at < 0) continue;
    in_handler += n;
    const auto handler = stack.begin() + at;
    const bool java_below = std::any_of(stack.begin(), handler, [](const std::string& s) { return s.rfind("Split.", 0) == 0; });
    if (at == 0 || stack[static_cast<size_t>(at) - 1] != "__restore_rt" || !java_below) continue;
    over_java += n;
    if (Complete(stack)) complete += n;
  }
  ASSERT_GT(in_handler, 100u) << "too few samples in the handler";
  RecordProperty("handler_samples", static_cast<int>(in_handler));
  RecordProperty("over_java_per100k", static_cast<int>(100000 * over_java / in_handler));
  RecordProperty("thread_start_per100k", static_cast<int>(100000 * complete / in_handler));
  EXPECT_GE(static_cast<double>(complete), kJavaSignalShare * static_cast<double>(in_handler))
      << complete << " of " << in_handler << " samples in the handler reach thread start through Java frames ("
      << over_java << " show __restore_rt over Java frames)";
}

// A JVM in its own mount and pid namespace (a container without a container
// runtime): its own /tmp (a tmpfs), pid 1 inside. arcprof copies the agent
// into that /tmp, attaches through /proc/PID/root, reads the jitdump there and
// maps the agent's namespace tids back to host threads.
TEST(JavaUnwindMisc, JvmInItsOwnMountAndPidNamespace) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  if (access("/usr/bin/unshare", X_OK) != 0) {
    if (InCi()) FAIL() << "unshare is missing (util-linux; CI=true: must not skip)";
    GTEST_SKIP() << "unshare is not installed";
  }
  // The classes are bound on /mnt first: the tree may live under the /tmp
  // that the tmpfs hides.
  std::string java_cmd = "mount --bind " + kClasses + " /mnt && mount -t tmpfs arcprof-test /tmp && exec " + std::string(JDK17_HOME) +
                         "/bin/java -XX:+EnableDynamicAgentLoading";
  for (const std::string& flag : kCompileFlags) java_cmd += " " + flag;
  java_cmd += " -cp /mnt Split 30";
  Subprocess container({"/usr/bin/unshare", "--mount", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c", java_cmd});
  ASSERT_TRUE(container.WaitForStderr("split: running", 30)) << container.stderr_text();
  // The JVM is unshare's child (pid 1 in its namespace).
  pid_t pid = 0;
  {
    std::ifstream children("/proc/" + std::to_string(container.pid()) + "/task/" +
                           std::to_string(container.pid()) + "/children");
    children >> pid;
  }
  ASSERT_GT(pid, 0);
  {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line, nspid;
    while (std::getline(status, line)) {
      if (line.rfind("NSpid:", 0) == 0) nspid = line;
    }
    ASSERT_NE(nspid.find("\t1"), std::string::npos) << nspid << ": not pid 1 in a namespace of its own";
  }
  sleep(3);
  TempDir tmp;
  const std::string db = tmp.path("container.db");
  Subprocess rec({kArcprof, "record", "-F", "4999", "-o", db, "-d", "8", "-p", std::to_string(pid)});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_TRUE(JvmHasAgent(rec.stderr_text(), pid)) << rec.stderr_text();
  kill(pid, SIGKILL);
  container.Wait();
  Profile p = LoadCapture(db);
  const SplitFigures f = Measure(p, pid);  // by the Java thread names "main" and "deep"
  ASSERT_GT(f.java, 200u) << "no samples on a thread named 'main': namespace tids not mapped?";
  ASSERT_GT(f.deep, 200u);
  EXPECT_GE(static_cast<double>(f.full) / static_cast<double>(f.java), 0.95) << f.full << "/" << f.java;
  ExpectThreeToOne(f, "namespaced JVM");
  ExpectAlmostNoSkips(f, "namespaced JVM");
}

}  // namespace
}  // namespace arcprof::testing
