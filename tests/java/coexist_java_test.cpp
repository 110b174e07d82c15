// Two arcprofs and one JVM: a `continuous` daemon of another build (a copy of
// the binary and its agent in a folder of their own) attaches every JVM; an
// engineer records one of them with `record -p`, and starts another under
// `record -- java`, which both attach at the same moment. HotSpot runs one
// copy of the agent; every arcprof reads its jitdump and side file, and gets
// the Java names and thread names.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "store/window_store.h"
#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;

// Burn.heavy's share of Burn.heavy + Burn.light on the JVM's thread named
// "main" (a Java thread name: the OS calls every JVM thread "java"), and the
// number of those samples.
std::pair<double, uint64_t> BurnShare(const Profile& p, uint32_t pid) {
  uint64_t heavy = 0, light = 0;
  for (const auto& [stack, n] :
       Stacks(p, [pid](const ThreadRecord& t) { return t.pid == pid && t.comm == "main"; })) {
    if (std::find(stack.begin(), stack.end(), "Burn.heavy") != stack.end()) heavy += n;
    if (std::find(stack.begin(), stack.end(), "Burn.light") != stack.end()) light += n;
  }
  return {heavy + light ? static_cast<double>(heavy) / static_cast<double>(heavy + light) : -1.0, heavy + light};
}

double Tolerance(uint64_t n) {
  return std::max(0.03, 4 * std::sqrt(0.75 * 0.25 / static_cast<double>(std::max<uint64_t>(n, 1))));
}

void RemoveJitFiles(pid_t pid) {
  for (const char* ext : {".dump", ".arcprof"}) unlink(("/tmp/jit-" + std::to_string(pid) + ext).c_str());
}

TEST(CoexistJava, DaemonAndRecordShareJvms) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const std::string java = std::string(JDK17_HOME) + "/bin/java";
  if (access(java.c_str(), X_OK) != 0) {
    if (InCi()) FAIL() << java << " is missing (CI=true: must not skip)";
    GTEST_SKIP() << java << " is not installed";
  }
  TempDir tmp;
  chmod(tmp.dir().c_str(), 0755);  // the JVM (root here) loads the daemon's agent from it
  const std::string daemon_bin = tmp.path("arcprof");
  std::filesystem::copy_file(kArcprof, daemon_bin);
  std::filesystem::copy_file(ARCPROF_AGENT, tmp.path("libarcprof_jvmti.so"));
  chmod(daemon_bin.c_str(), 0755);
  chmod(tmp.path("libarcprof_jvmti.so").c_str(), 0644);
  const std::string store = tmp.path("store");
  DetachedArcprof daemon(tmp.dir(), {daemon_bin, "continuous", "--store", store, "--window", "2s", "-F", "499",
                                     "--verbose-java"});
  ASSERT_TRUE(daemon.WaitForLog([](const std::string& log) { return log.find("continuous capture of") != std::string::npos; },
                                30))
      << daemon.log();

  // A JVM the daemon attaches first, then recorded with -p.
  Subprocess jvm({java, "-XX:+PreserveFramePointer", "-cp", JAVA_CLASSES, "Burn", "25"});
  ASSERT_TRUE(jvm.WaitForStderr("burn: running", 30)) << jvm.stderr_text();
  const pid_t first = jvm.pid();
  ASSERT_TRUE(daemon.WaitForLog([first](const std::string& log) { return JvmHasAgent(log, first); }, 30))
      << daemon.log();
  {
    const std::string db = tmp.path("p.db");
    Subprocess rec({kArcprof, "record", "-F", "4999", "-o", db, "-d", "4", "-p", std::to_string(first)});
    ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
    EXPECT_NE(rec.stderr_text().find("JVM " + std::to_string(first) + " already has the agent"), std::string::npos)
        << rec.stderr_text();
    Profile p = LoadCapture(db);
    EXPECT_EQ(p.counters["java.attach_failed"], 0);
    const auto [share, n] = BurnShare(p, static_cast<uint32_t>(first));
    ASSERT_GT(n, 200u) << "few Java-named samples on the thread named 'main'";
    EXPECT_NEAR(share, 0.75, Tolerance(n)) << n << " samples";
  }

  // A JVM started by record while the daemon runs: both attach it at once,
  // with agents of two paths; one agent runs, both arcprofs name the code.
  pid_t second = 0;
  {
    const std::string db = tmp.path("cmd.db");
    Subprocess rec({kArcprof, "record", "-F", "4999", "-o", db, "--", java, "-XX:+PreserveFramePointer", "-cp",
                    JAVA_CLASSES, "Burn", "5"});
    ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
    EXPECT_EQ(rec.stderr_text().find("cannot attach"), std::string::npos) << rec.stderr_text();
    Profile p = LoadCapture(db);
    for (const ThreadRecord& t : p.threads) {
      if (t.comm == "main") second = static_cast<pid_t>(t.pid);
    }
    ASSERT_GT(second, 0) << "no Java thread named 'main' in the recording";
    EXPECT_TRUE(JvmHasAgent(rec.stderr_text(), second)) << rec.stderr_text();
    EXPECT_EQ(p.counters["java.attach_failed"], 0);
    const auto [share, n] = BurnShare(p, static_cast<uint32_t>(second));
    ASSERT_GT(n, 200u);
    EXPECT_NEAR(share, 0.75, Tolerance(n)) << n << " samples";
  }
  EXPECT_EQ(daemon.log().find("cannot attach to JVM " + std::to_string(second)), std::string::npos) << daemon.log();
  // Neither left an attach trigger behind.
  for (pid_t pid : {first, second}) {
    EXPECT_NE(access(("/tmp/.attach_pid" + std::to_string(pid)).c_str(), F_OK), 0) << "trigger of " << pid << " left";
  }
  jvm.Signal(SIGKILL);
  jvm.Wait();
  RemoveJitFiles(first);
  RemoveJitFiles(second);

  // The daemon named both JVMs' code too.
  ASSERT_TRUE(daemon.Stop()) << daemon.log();
  auto opened = WindowStore::OpenForReading(store);
  ASSERT_TRUE(opened) << daemon.log();
  auto all = opened->ReadRange(0, UINT64_MAX, nullptr);
  ASSERT_TRUE(all) << all.error().message;
  for (pid_t pid : {first, second}) {
    const auto [share, n] = BurnShare(*all, static_cast<uint32_t>(pid));
    EXPECT_GT(n, 100u) << "daemon: JVM " << pid;
    EXPECT_NEAR(share, 0.75, Tolerance(n)) << "daemon: JVM " << pid << ", " << n << " samples";
  }
}

}  // namespace
}  // namespace arcprof::testing
