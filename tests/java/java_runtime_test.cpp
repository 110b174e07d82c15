// Runtime tests: the real arcprof binary and JVMTI agent, real JVMs (Debian's
// openjdk-17 and Temurin 25), node with --perf-basic-prof, perf inject.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "runtimes/java/java_attach.h"
#include "spaces/address_spaces.h"
#include "symbolize/jitdump.h"
#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kAgent = ARCPROF_AGENT;
const std::string kClasses = JAVA_CLASSES;

struct Jdk {
  std::string name;
  std::string home;
};

// Test names show the JDK, not the struct's bytes.
void PrintTo(const Jdk& jdk, std::ostream* os) { *os << jdk.name; }

std::string JavaBin(const Jdk& jdk) { return jdk.home + "/bin/java"; }

// Temurin 25 is on the machines this project runs on; elsewhere an explicit skip.
#define REQUIRE_JDK(jdk)                                                                         \
  do {                                                                                           \
    if (access(JavaBin(jdk).c_str(), X_OK) != 0) {                                               \
      if (InCi()) FAIL() << JavaBin(jdk) << " is missing (CI=true: must not skip)";              \
      GTEST_SKIP() << JavaBin(jdk) << " is not installed";                                       \
    }                                                                                            \
  } while (0)

// Removes the agent's files of a JVM when the test ends.
class JitFiles {
 public:
  explicit JitFiles(pid_t pid) : pid_(pid) {}
  ~JitFiles() {
    for (const char* ext : {".dump", ".arcprof"}) unlink(Path(ext).c_str());
    unlink(("/tmp/perf-" + std::to_string(pid_) + ".map").c_str());
  }
  std::string Path(const char* ext) const { return "/tmp/jit-" + std::to_string(pid_) + ext; }

 private:
  pid_t pid_;
};

template <typename Pred>
uint64_t SamplesWith(const Profile& p, Pred keep, const std::string& symbol) {
  uint64_t n = 0;
  for (const auto& [stack, count] : Stacks(p, keep)) {
    if (std::find(stack.begin(), stack.end(), symbol) != stack.end()) n += count;
  }
  return n;
}

template <typename Pred>
uint64_t AllSamples(const Profile& p, Pred keep) {
  uint64_t n = 0;
  for (const auto& [stack, count] : Stacks(p, keep)) n += count;
  return n;
}

// The 3:1 checks on a capture of Burn: heavy's share of heavy+light within
// 3 points of 75%, and at least 99% of the main thread's stacks complete.
// The share is a binomial sample (sd = sqrt(0.75 * 0.25 / n)): the tests
// sample at 4999 Hz so that 3 points are several sd even when a loaded
// machine gives Burn a fraction of a CPU (at 999 Hz it got 150-550 samples
// in 2-3 s at load average 20: 3 points was 1.2-2 sd); with fewer than
// ~3,300 samples the tolerance is 4 sd.
void CheckBurn(const Profile& p, pid_t pid, const std::string& what) {
  auto main_thread = [pid](const ThreadRecord& t) { return static_cast<pid_t>(t.pid) == pid && t.comm == "main"; };
  const double heavy = static_cast<double>(SamplesWith(p, main_thread, "Burn.heavy"));
  const double light = static_cast<double>(SamplesWith(p, main_thread, "Burn.light"));
  ASSERT_GT(heavy + light, 200) << what << ": too few samples in Burn.heavy/light on thread 'main'";
  const double share = heavy / (heavy + light);
  EXPECT_NEAR(share, 0.75, std::max(0.03, 4 * std::sqrt(0.75 * 0.25 / (heavy + light))))
      << what << ": heavy " << heavy << " light " << light;
  // Java stacks (those through a Burn method) complete to the thread's start;
  // the JVM's own start-up (create_vm) is native code, not the point here.
  uint64_t total = 0, complete = 0;
  for (const auto& [stack, count] : Stacks(p, main_thread)) {
    if (std::none_of(stack.begin(), stack.end(), [](const std::string& f) { return f.rfind("Burn.", 0) == 0; })) continue;
    total += count;
    if (!stack.empty() && (stack[0] == "clone3" || stack[0] == "clone" || stack[0] == "start_thread")) complete += count;
  }
  ASSERT_GT(total, 0u) << what;
  EXPECT_GE(static_cast<double>(complete) / static_cast<double>(total), 0.99)
      << what << ": " << complete << "/" << total << " main-thread Java samples complete";
}

pid_t StartBurn(const Jdk& jdk, std::unique_ptr<Subprocess>* out, std::vector<std::string> flags, double seconds) {
  std::vector<std::string> argv = {JavaBin(jdk)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-cp", kClasses, "Burn", std::to_string(seconds)});
  *out = std::make_unique<Subprocess>(argv);
  EXPECT_TRUE((*out)->WaitForStderr("burn: running", 30)) << (*out)->stderr_text();
  return (*out)->pid();
}

// Until the JVM's SIGQUIT handler is installed an attach must not signal it.
bool WaitForSigquitHandler(pid_t pid, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("SigCgt:", 0) == 0 && (std::stoull(line.substr(7), nullptr, 16) >> (SIGQUIT - 1)) & 1) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

class JavaRuntime : public ::testing::TestWithParam<Jdk> {};

TEST_P(JavaRuntime, AgentAtStartGivesThreeToOneAndCompleteStacks) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const Jdk jdk = GetParam();
  REQUIRE_JDK(jdk);
  TempDir tmp;
  const std::string db = tmp.path("java.db");
  Subprocess rec({kArcprof, "record", "-q", "-F", "4999", "-o", db, "--", JavaBin(jdk), "-XX:+PreserveFramePointer",
                  "-agentpath:" + kAgent, "-cp", kClasses, "Burn", "5"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  pid_t pid = 0;
  for (const ThreadRecord& t : p.threads) {
    if (t.comm == "main") pid = static_cast<pid_t>(t.pid);
  }
  JitFiles files(pid);
  ASSERT_NE(pid, 0) << "no thread named 'main': Java thread names were not applied";
  CheckBurn(p, pid, jdk.name + " -agentpath");
  EXPECT_EQ(p.counters["java.jvms_without_preserve_frame_pointer"], 0);
  EXPECT_GT(p.counters["jit.code_loads"], 100);
  // Compiled frames are kind jit in JITCODE; interpreted ones have their
  // own kind and the method's name (Burn.main is interpreted, and so is
  // Burn.heavy before it is compiled).
  bool saw_heavy = false, saw_interpreted_main = false;
  for (const FrameRecord& f : p.frames.all()) {
    if (f.symbol == "Burn.heavy" && !f.inlined && f.kind == FrameKind::kJit) {
      saw_heavy = true;
      EXPECT_EQ(p.frames.module_of(f), "JITCODE");
    }
    if (f.symbol == "Burn.main" && f.kind == FrameKind::kInterpreted) {
      saw_interpreted_main = true;
      EXPECT_EQ(p.frames.module_of(f), "JITCODE");
    }
  }
  EXPECT_TRUE(saw_heavy);
  EXPECT_TRUE(saw_interpreted_main);
}

TEST_P(JavaRuntime, LateAttachByRecordGivesThreeToOne) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const Jdk jdk = GetParam();
  REQUIRE_JDK(jdk);
  std::unique_ptr<Subprocess> java;
  // EnableDynamicAgentLoading only silences JDK 21+'s warning; 17 knows the flag too.
  const pid_t pid = StartBurn(jdk, &java, {"-XX:+PreserveFramePointer", "-XX:+EnableDynamicAgentLoading"}, 30);
  JitFiles files(pid);
  ASSERT_TRUE(WaitForSigquitHandler(pid, 10));
  TempDir tmp;
  const std::string db = tmp.path("late.db");
  Subprocess rec({kArcprof, "record", "-F", "4999", "-o", db, "-d", "5", "-p", std::to_string(pid)});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_TRUE(JvmHasAgent(rec.stderr_text(), pid)) << rec.stderr_text();
  Profile p = LoadCapture(db);
  CheckBurn(p, pid, jdk.name + " late attach");
  EXPECT_EQ(p.counters["java.jvms_attached"], 1);
  java->Signal(SIGKILL);
}

INSTANTIATE_TEST_SUITE_P(Jdks, JavaRuntime,
                         ::testing::Values(Jdk{"openjdk17", JDK17_HOME}, Jdk{"temurin25", TEMURIN_HOME}),
                         [](const auto& info) { return info.param.name; });

const Jdk kJdk17{"openjdk17", JDK17_HOME};
const Jdk kTemurin{"temurin25", TEMURIN_HOME};

TEST(JavaRuntimeMisc, InlinedMethodsAreFramesOfTheirOwn) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("inline.db");
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", JavaBin(kJdk17), "-XX:+PreserveFramePointer",
                  "-agentpath:" + kAgent, "-cp", kClasses, "Inline", "3"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  uint64_t total = 0, inlined_leaf = 0;
  for (size_t t = 0; t < p.threads.size(); ++t) {
    if (p.threads[t].comm != "main") continue;
    JitFiles files(static_cast<pid_t>(p.threads[t].pid));
    const CallTree& tree = p.threads[t].tree;
    const auto& nodes = tree.nodes();
    for (size_t n = 1; n < nodes.size(); ++n) {
      total += tree.value(static_cast<uint32_t>(n), kSamplesValue);
      const FrameRecord& leaf = p.frames.at(nodes[n].frame);
      if (tree.value(static_cast<uint32_t>(n), kSamplesValue) == 0 || leaf.symbol != "Inline.step" || !leaf.inlined) continue;
      // Its parent is the compiled method it was inlined into.
      const FrameRecord& parent = p.frames.at(nodes[nodes[n].parent].frame);
      EXPECT_EQ(parent.symbol, "Inline.inner");
      EXPECT_EQ(leaf.kind, FrameKind::kJit);
      EXPECT_EQ(p.frames.module_of(leaf), "JITCODE");
      inlined_leaf += tree.value(static_cast<uint32_t>(n), kSamplesValue);
    }
  }
  ASSERT_GT(total, 300u);  // about 3000 on an idle machine, 460 seen under load
  // The rest: the interpreter and the first compiled versions before C2.
  EXPECT_GE(static_cast<double>(inlined_leaf) / static_cast<double>(total), 0.6) << inlined_leaf << "/" << total;
}

// Without PreserveFramePointer the agent gives compiled frames' sizes: the
// stacks are as complete as with it, and the report has nothing to warn of.
TEST(JavaRuntimeMisc, WithoutPreserveFramePointerStacksAreStillComplete) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("nofp.db");
  Subprocess rec({kArcprof, "record", "-q", "-F", "4999", "-o", db, "--", JavaBin(kJdk17), "-agentpath:" + kAgent, "-cp",
                  kClasses, "Burn", "2"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  for (const ThreadRecord& t : p.threads) {
    if (t.comm == "main") JitFiles files(static_cast<pid_t>(t.pid));
  }
  EXPECT_EQ(p.counters["java.jvms_without_preserve_frame_pointer"], 1);
  EXPECT_EQ(p.counters["java.jvms_unwalkable"], 0);
  EXPECT_GT(p.counters["jit.frame_records"], 10);
  auto [code, report] = RunCapture({kArcprof, "report", "-i", db});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(report.find("Warning:"), std::string::npos) << report;
  // The JVM said so once on its stderr (the agent's note).
  EXPECT_NE(rec.stderr_text().find("-XX:+PreserveFramePointer is off: arcprof steps compiled frames"),
            std::string::npos);
  for (const ThreadRecord& t : p.threads) {
    if (t.comm == "main") {
      CheckBurn(p, static_cast<pid_t>(t.pid), "openjdk17 without PreserveFramePointer");
      break;
    }
  }
}

TEST(JavaRuntimeMisc, AttachRefusedByJdk25IsOneLineAndRecordingGoesOn) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  REQUIRE_JDK(kTemurin);
  std::unique_ptr<Subprocess> java;
  const pid_t pid = StartBurn(kTemurin, &java, {"-XX:-EnableDynamicAgentLoading"}, 30);
  JitFiles files(pid);
  ASSERT_TRUE(WaitForSigquitHandler(pid, 10));
  Subprocess attach({kArcprof, "java", "attach", std::to_string(pid)});
  EXPECT_EQ(attach.Wait(), 1);
  const std::string& out = attach.stderr_text();
  EXPECT_NE(out.find("EnableDynamicAgentLoading"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  TempDir tmp;
  const std::string db = tmp.path("refused.db");
  Subprocess rec({kArcprof, "record", "-q", "-F", "4999", "-o", db, "-d", "1", "-p", std::to_string(pid)});
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_NE(rec.stderr_text().find("EnableDynamicAgentLoading"), std::string::npos) << rec.stderr_text();
  Profile p = LoadCapture(db);
  EXPECT_EQ(p.counters["java.attach_failed"], 1);
  EXPECT_GT(p.total_samples(), 100u);
  java->Signal(SIGKILL);
}

TEST(JavaRuntimeMisc, AttachAndStatusCommands) {
  std::unique_ptr<Subprocess> java;
  const pid_t pid = StartBurn(kJdk17, &java, {"-XX:+PreserveFramePointer"}, 30);
  JitFiles files(pid);
  ASSERT_TRUE(WaitForSigquitHandler(pid, 10));
  // Not loaded, unless a continuous daemon on the machine attached its agent
  // already: the JVM maps it before and after status, which must then say so.
  auto agent_mapped = [pid] {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    const std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    return text.find("/libarcprof_jvmti.so") != std::string::npos;
  };
  const bool mapped_before = agent_mapped();
  auto [code, out] = RunCapture({kArcprof, "java", "status", std::to_string(pid)});
  EXPECT_EQ(code, 0);
  const bool mapped_after = agent_mapped();
  if (mapped_before) EXPECT_NE(out.find("agent: loaded"), std::string::npos) << out;
  if (!mapped_after) EXPECT_NE(out.find("agent: not loaded"), std::string::npos) << out;
  std::tie(code, out) = RunCapture({kArcprof, "java", "attach", std::to_string(pid), "--agent", kAgent});
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) = RunCapture({kArcprof, "java", "status", std::to_string(pid)});
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("agent: loaded"), std::string::npos) << out;
  EXPECT_NE(out.find("-XX:+PreserveFramePointer: on; agent loaded at runtime"), std::string::npos) << out;
  // Attaching twice keeps the one agent and its file.
  std::tie(code, out) = RunCapture({kArcprof, "java", "attach", std::to_string(pid), "--agent", kAgent});
  EXPECT_EQ(code, 0) << out;
  Subprocess not_jvm({kArcprof, "java", "status", "1"});
  EXPECT_EQ(not_jvm.Wait(), 1);
  EXPECT_NE(not_jvm.stderr_text().find("not a JVM"), std::string::npos) << not_jvm.stderr_text();
  java->Signal(SIGKILL);
}

// The whole-machine scan inspects a JVM from the side band's mappings (no
// /proc maps read): what it finds is what /proc says, before and after the
// agent is loaded, and a process that maps no JVM is none either way.
TEST(JavaRuntimeMisc, MappingsKnownFromTheSideBandInspectAJvmAsProcDoes) {
  std::unique_ptr<Subprocess> java;
  const pid_t pid = StartBurn(kJdk17, &java, {}, 30);
  ASSERT_TRUE(WaitForSigquitHandler(pid, 10));
  auto from_spaces = [](uint32_t p) {
    AddressSpaces spaces;
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const uint64_t now = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
    spaces.SnapshotProcess(p, now);
    JvmMappings maps;
    if (auto files = spaces.MappedFiles(p, now)) {
      for (const MappedFile& f : files->files) NoteJvmMapping(f.path, &maps);
    }
    return InspectJvmWith(p, maps);
  };
  auto expect_same = [&](const char* when) {
    auto proc = InspectJvm(static_cast<uint32_t>(pid));
    auto side = from_spaces(static_cast<uint32_t>(pid));
    ASSERT_TRUE(proc.ok()) << when << ": " << proc.error().message;
    ASSERT_TRUE(side.ok()) << when << ": " << side.error().message;
    EXPECT_TRUE(side->hotspot) << when;
    EXPECT_EQ(side->hotspot, proc->hotspot) << when;
    EXPECT_EQ(side->other_jvm, proc->other_jvm) << when;
    EXPECT_EQ(side->agent_loaded, proc->agent_loaded) << when;
    EXPECT_EQ(side->catches_sigquit, proc->catches_sigquit) << when;
    EXPECT_EQ(side->ns_pid, proc->ns_pid) << when;
    EXPECT_EQ(side->uid, proc->uid) << when;
    EXPECT_EQ(side->gid, proc->gid) << when;
  };
  expect_same("before the attach");
  auto [code, out] = RunCapture({kArcprof, "java", "attach", std::to_string(pid), "--agent", kAgent});
  ASSERT_EQ(code, 0) << out;
  expect_same("after the attach");
  auto attached = InspectJvm(static_cast<uint32_t>(pid));
  ASSERT_TRUE(attached.ok());
  EXPECT_TRUE(attached->agent_loaded);
  EXPECT_FALSE(InspectJvm(static_cast<uint32_t>(getpid())).ok());
  EXPECT_FALSE(from_spaces(static_cast<uint32_t>(getpid())).ok());
  java->Signal(SIGKILL);
}

TEST(JavaRuntimeMisc, PerfInjectAcceptsTheJitdump) {
  if (std::string(PERF_BIN).empty() || access(PERF_BIN, X_OK) != 0) {
    if (InCi()) FAIL() << "perf is missing (linux-perf; CI=true: must not skip)";
    GTEST_SKIP() << "perf is not installed";
  }
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string data = tmp.path("perf.data"), injected = tmp.path("perf.jit.data");
  // -k 1: CLOCK_MONOTONIC, the jitdump's clock; -B -N: perf 6.1 can crash
  // collecting build-ids of a JVM's mappings, which perf inject does not need.
  Subprocess rec({PERF_BIN, "record", "-q", "-B", "-N", "-k", "1", "-e", "cpu-clock", "-o", data, "--",
                  JavaBin(kJdk17), "-XX:+PreserveFramePointer", "-agentpath:" + kAgent + "=dir=" + tmp.dir(),
                  "-cp", kClasses, "Burn", "2"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  // The jitdump and the jitted-*.so files perf inject writes next to it stay
  // in tmp, not in /tmp (perf finds the jitdump by its executable mapping).
  auto [code, out] = RunCapture({PERF_BIN, "inject", "--jit", "-i", data, "-o", injected});
  ASSERT_EQ(code, 0) << out;
  auto [rcode, report] = RunCapture({PERF_BIN, "report", "-i", injected, "--stdio", "--sort", "sym"});
  ASSERT_EQ(rcode, 0);
  // perf names the code from the jitted-*.so files it built from our CODE_LOADs.
  double heavy = 0, light = 0;
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) {
    const double pct = atof(line.c_str());
    if (line.find("] Burn.heavy") != std::string::npos) heavy += pct;
    if (line.find("] Burn.light") != std::string::npos) light += pct;
  }
  ASSERT_GT(heavy + light, 50) << report.substr(0, 3000);
  EXPECT_NEAR(heavy / (heavy + light), 0.75, 0.05);
}

// Samples of node's processes whose leaf is burn.js's heavyLoop / lightLoop;
// removes the perf maps (and jitdumps) node left in /tmp.
std::pair<double, double> NodeHeavyLight(const Profile& p) {
  const auto leaves = LeafCounts(p, [](const ThreadRecord& t) { return t.process_comm == "node"; });
  double heavy = 0, light = 0;
  for (const auto& [symbol, count] : leaves) {
    if (symbol.find("heavyLoop") != std::string::npos) heavy += static_cast<double>(count);
    if (symbol.find("lightLoop") != std::string::npos) light += static_cast<double>(count);
  }
  for (const ThreadRecord& t : p.threads) {
    if (t.process_comm != "node") continue;
    unlink(("/tmp/perf-" + std::to_string(t.pid) + ".map").c_str());
    unlink(("/tmp/jit-" + std::to_string(t.pid) + ".dump").c_str());
  }
  return {heavy, light};
}

// Pids wrap (32768 on this machine kind), and runtimes leave /tmp/jit-PID.dump
// behind: a jitdump an earlier process with the same pid wrote must not stand
// for this process's code. The planted one (header only, made at boot) used to
// win over node's own perf map and leave every JIT frame unnamed.
TEST(JavaRuntimeMisc, StaleJitdumpOfAReusedPidDoesNotHideThePerfMap) {
  if (std::string(NODE_BIN).empty() || access(NODE_BIN, X_OK) != 0) {
    if (InCi()) FAIL() << "node is missing (CI=true: must not skip)";
    GTEST_SKIP() << "node is not installed";
  }
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  std::string header;
  auto put32 = [&](uint32_t v) { header.append(reinterpret_cast<const char*>(&v), 4); };
  auto put64 = [&](uint64_t v) { header.append(reinterpret_cast<const char*>(&v), 8); };
  put32(0x4A695444);  // "JiTD"
  put32(1);
  put32(40);
  put32(62);  // x86-64
  put32(0);
  put32(0);
  put64(1);  // made 1 ns after boot: long before any process of this test
  put64(0);
  std::ofstream(tmp.path("stale.dump"), std::ios::binary) << header;
  const std::string db = tmp.path("node.db");
  // The shell plants the file under its own pid, which node then keeps.
  Subprocess rec({kArcprof, "record", "-o", db, "--", "/bin/sh", "-c",
                  "cp " + tmp.path("stale.dump") + " /tmp/jit-$$.dump && exec " + std::string(NODE_BIN) +
                      " --perf-basic-prof " + BURN_JS + " 2"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_NE(rec.stderr_text().find("made before process"), std::string::npos) << rec.stderr_text();
  Profile p = LoadCapture(db);
  const auto [heavy, light] = NodeHeavyLight(p);
  const double named = heavy + light;
  EXPECT_GT(named, 200) << "node's JIT frames unnamed: the stale jitdump was taken for its own";
  EXPECT_GT(p.counters["jit.perf_map_entries"], 10);
}

TEST(JavaRuntimeMisc, NodePerfMapNamesTheHotFunction) {
  if (std::string(NODE_BIN).empty() || access(NODE_BIN, X_OK) != 0) {
    if (InCi()) FAIL() << "node is missing (CI=true: must not skip)";
    GTEST_SKIP() << "node is not installed";
  }
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("node.db");
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", NODE_BIN, "--perf-basic-prof", BURN_JS, "4"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  const auto [heavy, light] = NodeHeavyLight(p);
  ASSERT_GT(heavy + light, 500);
  EXPECT_NEAR(heavy / (heavy + light), 0.75, 0.05);
  EXPECT_GT(p.counters["jit.perf_map_entries"], 10);
}

// Per-phase ground truth under class-loader churn with a small code cache:
// every JIT frame names code that the agent's own records say was live at
// that address during that phase, and each phase's method dominates it.
TEST(JavaRuntimeMisc, AddressReuseAttributesEachPhaseToItsOwnCode) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  constexpr int kPhases = 8;
  TempDir tmp;
  const std::string db = tmp.path("churn.db");
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", JavaBin(kJdk17), "-XX:+PreserveFramePointer",
                  "-XX:ReservedCodeCacheSize=8m", "-XX:+UseCodeCacheFlushing", "-XX:-BackgroundCompilation",
                  "-agentpath:" + kAgent, "-cp", kClasses, "Churn", CHURN_CLASSES, std::to_string(kPhases), "1"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  // "phase N START END": each phase's CLOCK_MONOTONIC window, from the program.
  std::map<int, std::pair<uint64_t, uint64_t>> windows;
  std::istringstream err(rec.stderr_text());
  for (std::string line; std::getline(err, line);) {
    int n;
    unsigned long long a, b;
    if (sscanf(line.c_str(), "phase %d %llu %llu", &n, &a, &b) == 3) windows[n] = {a, b};
  }
  ASSERT_EQ(windows.size(), static_cast<size_t>(kPhases)) << rec.stderr_text();
  Profile p = LoadCapture(db);
  pid_t pid = 0;
  for (const ThreadRecord& t : p.threads) {
    if (t.comm.rfind("phase-", 0) == 0) pid = static_cast<pid_t>(t.pid);
  }
  ASSERT_NE(pid, 0);
  JitFiles files(pid);

  // The agent's records: every version of every address, with its live range.
  std::ifstream dump_in(files.Path(".dump"), std::ios::binary), side_in(files.Path(".arcprof"), std::ios::binary);
  const std::string dump((std::istreambuf_iterator<char>(dump_in)), {});
  const std::string side((std::istreambuf_iterator<char>(side_in)), {});
  auto header = jitdump::ParseFileHeader(dump);
  ASSERT_TRUE(header.ok());
  jitdump::Records records;
  ASSERT_FALSE(jitdump::ParseRecords(std::string_view(dump).substr(40), false, &records).corrupt);
  jitdump::SideRecords side_records;
  ASSERT_FALSE(jitdump::ParseSideRecords(std::string_view(side).substr(16), &side_records).corrupt);
  std::map<uint64_t, uint64_t> unload_by_index;
  for (const auto& u : side_records.unloads) unload_by_index[u.index] = u.t_ns;
  struct Live {
    uint64_t from, until;
  };
  std::map<std::pair<std::string, uint64_t>, std::vector<Live>> live;  // (name, start) -> ranges
  std::map<uint64_t, std::set<std::string>> names_at;
  for (const auto& l : records.loads) {
    auto u = unload_by_index.find(l.index);
    live[{l.name, l.addr}].push_back({l.t_ns, u == unload_by_index.end() ? UINT64_MAX : u->second});
    names_at[l.addr].insert(l.name);
  }
  size_t reused = 0;
  for (const auto& [addr, names] : names_at) reused += names.size() > 1;
  RecordProperty("addresses_reused_by_another_method", static_cast<int>(reused));
  // About 200 in 8 phases here: the check below is about reused code.
  EXPECT_GT(reused, 0u) << "no code address was reused: the test does not test reuse";

  for (int phase = 0; phase < kPhases; ++phase) {
    const std::string thread = "phase-" + std::to_string(phase);
    const std::string own = "Hot" + std::to_string(phase) + ".spin";
    auto in_phase = [&](const ThreadRecord& t) { return static_cast<pid_t>(t.pid) == pid && t.comm == thread; };
    const uint64_t total = AllSamples(p, in_phase);
    // About 1000 on an idle machine; 230, once exactly 100, under heavy load.
    // The shares below still mean something from 40 samples on.
    ASSERT_GT(total, 40u) << thread;
    // C2 compiles the reflection accessor (and Method.invoke) with HotNN.spin
    // inlined. HotSpot's own debug info for that code (the PcDescs JVMTI
    // hands the agent, the same ones AsyncGetCallTrace uses) has no scope for
    // the instructions of the unrolled loop body, and the next PcDesc after
    // them carries the accessor's scope: those samples show the accessor as
    // their leaf. Measured: spin 0.50-0.99 of a phase depending on how soon
    // C2 gets there (0.78 on an idle machine), spin plus an accessor leaf
    // 0.96-0.99. The accessor's code is checked below like every JIT frame:
    // it was live at that address during this phase.
    uint64_t accessor_leaf = 0;
    for (const auto& [stack, count] : Stacks(p, in_phase)) {
      if (std::find(stack.begin(), stack.end(), own) != stack.end()) continue;
      if (!stack.empty() && stack.back().find("GeneratedMethodAccessor") != std::string::npos) accessor_leaf += count;
    }
    const double own_share = static_cast<double>(SamplesWith(p, in_phase, own)) / static_cast<double>(total);
    EXPECT_GE(own_share, 0.35) << thread;
    EXPECT_GE(own_share + static_cast<double>(accessor_leaf) / static_cast<double>(total), 0.85) << thread;
    for (int other = 0; other < kPhases; ++other) {
      if (other == phase) continue;
      EXPECT_EQ(SamplesWith(p, in_phase, "Hot" + std::to_string(other) + ".spin"), 0u) << thread;
    }
  }
  // Every named JIT frame of a phase thread is a (name, address) the agent
  // loaded and that was live at that address during that phase's window
  // (a phase thread only runs inside its window).
  size_t checked = 0;
  for (size_t t = 0; t < p.threads.size(); ++t) {
    const ThreadRecord& thread = p.threads[t];
    if (static_cast<pid_t>(thread.pid) != pid || thread.comm.rfind("phase-", 0) != 0) continue;
    const auto [from, until] = windows[std::stoi(thread.comm.substr(6))];
    for (const auto& node : p.threads[t].tree.nodes()) {
      if (node.frame == CallTree::kNoFrame) continue;
      const FrameRecord& f = p.frames.at(node.frame);
      if (f.kind != FrameKind::kJit || f.inlined || f.symbol.empty()) continue;
      auto it = live.find({f.symbol, f.address});
      ASSERT_NE(it, live.end()) << f.symbol << " at 0x" << std::hex << f.address << " was never loaded there";
      bool overlaps = false;
      // The thread starts a little before its window (class loading) and
      // ends a little after: 50 ms of slack on each side.
      constexpr uint64_t kSlack = 50'000'000;
      for (const Live& l : it->second) overlaps = overlaps || (l.from <= until + kSlack && l.until >= from - kSlack);
      EXPECT_TRUE(overlaps) << thread.comm << ": " << f.symbol << " at 0x" << std::hex << f.address
                            << " was not live there during the phase";
      ++checked;
    }
  }
  EXPECT_GT(checked, static_cast<size_t>(kPhases));
}

}  // namespace
}  // namespace arcprof::testing
