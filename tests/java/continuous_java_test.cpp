// Continuous capture attaches to JVMs started after it, and again to a JVM
// that is restarted: two Burn JVMs one after the other, both named.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "store/window_store.h"
#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

TEST(ContinuousJava, JvmsStartedLaterAndRestartedAreAttached) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const std::string java = std::string(JDK17_HOME) + "/bin/java";
  ARCPROF_REQUIRE_TOOL(java, "openjdk-17-jdk-headless");
  TempDir tmp;
  const std::string store = tmp.path("store");
  Subprocess daemon({ARCPROF_BIN, "continuous", "--store", store, "--window", "2s", "--verbose-java", "-F", "199"});
  ASSERT_TRUE(daemon.WaitForStderr("continuous capture of system", 30)) << daemon.stderr_text();
  std::vector<pid_t> jvms;
  for (int run = 0; run < 2; ++run) {
    Subprocess jvm({java, "-XX:+PreserveFramePointer", "-cp", JAVA_CLASSES, "Burn", "5"});
    jvms.push_back(jvm.pid());
    // Attached by this daemon, or found with the agent of another arcprof
    // running on the machine (then this daemon reads that agent's files).
    const pid_t pid = jvm.pid();
    ASSERT_TRUE(daemon.WaitForStderrMatch([pid](const std::string& text) { return JvmHasAgent(text, pid); }, 20))
        << daemon.stderr_text();
    EXPECT_EQ(jvm.Wait(), 0) << jvm.stderr_text();
    // Attached by this daemon: the agent removed its files at VM death (the
    // daemon still read them to the end: the names are checked below). An
    // agent another arcprof loaded first keeps that arcprof's options.
    const bool ours = daemon.stderr_text().find("attached to JVM " + std::to_string(pid) + "\n") != std::string::npos;
    for (const char* ext : {".dump", ".arcprof"}) {
      const std::string path = "/tmp/jit-" + std::to_string(jvm.pid()) + ext;
      if (ours) EXPECT_NE(access(path.c_str(), F_OK), 0) << path << " was left behind";
      unlink(path.c_str());
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();

  auto opened = WindowStore::OpenForReading(store);
  ASSERT_TRUE(opened);
  auto all = opened->ReadRange(0, UINT64_MAX, nullptr);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_GE(all->counters["java.jvms_attached"], 2);
  for (pid_t pid : jvms) {
    uint64_t heavy = 0, total = 0;
    std::map<std::string, uint64_t> leaves;
    for (const auto& [stack, count] : Stacks(*all, [&](const ThreadRecord& t) { return t.pid == static_cast<uint32_t>(pid); })) {
      total += count;
      if (!stack.empty()) leaves[stack.back()] += count;
      if (std::find(stack.begin(), stack.end(), "Burn.heavy") != stack.end()) heavy += count;
    }
    std::string top;
    for (const auto& [leaf, count] : leaves) {
      if (count * 20 >= total) top += leaf + "=" + std::to_string(count) + " ";
    }
    // Burn.heavy is 3/4 of Burn's work: named in a good part of the JVM's samples.
    EXPECT_GT(heavy * 5, total) << "JVM " << pid << ": Burn.heavy in " << heavy << " of " << total
                                << " samples; leaves: " << top;
  }
}

}  // namespace
}  // namespace arcprof::testing
