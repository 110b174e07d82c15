// Churn soak (make test, label runtime): `arcprof continuous` under hundreds of
// short processes per second and a JVM that restarts. What is measured: the
// daemon's open files stay flat and its RSS grows under 10% after a warm-up
// (processes, files, JIT sources and unwinder state are dropped some time
// after their process exits), and short processes are still named. The hour-long version is
// bench/churn_soak.sh (docs/performance.md).
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kChurn = std::string(ARCPROF_TEST_PROGRAMS) + "/churn";
const std::string kStormChild = std::string(ARCPROF_TEST_PROGRAMS) + "/storm_child";
const std::string kSpinSource = ARCPROF_CHURN_JAVA;

uint64_t RssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

size_t OpenFds(pid_t pid) {
  size_t n = 0;
  if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

TEST(ChurnRuntime, ContinuousStaysFlatUnderProcessChurnAndNamesShortProcesses) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ASSERT_EQ(access("/usr/bin/java", X_OK), 0) << "java is installed by scripts/install-deps.sh";
  TempDir tmp;
  const std::string store = tmp.path("store");
  // ARCPROF_CHURN_SECONDS shortens the run when debugging the test itself.
  const int kSeconds = getenv("ARCPROF_CHURN_SECONDS") ? atoi(getenv("ARCPROF_CHURN_SECONDS")) : 150;
  const int kWarmupSeconds = kSeconds * 2 / 5;  // retention (10 s), windows (10 s), caches filling
  // 200 short processes per second (a quarter of them burn 3 ms in storm_work).
  Subprocess churn({kChurn, "200", std::to_string(kSeconds), kStormChild}, false);
  // A JVM that restarts: 4 s of spinning, exit, again.
  const std::string loop = "end=$(($(date +%s) + " + std::to_string(kSeconds - 5) +
                           ")); while [ $(date +%s) -lt $end ]; do /usr/bin/java -XX:+UseSerialGC "
                           "-Xmx64m " + kSpinSource + " 4 >/dev/null 2>&1; done";
  Subprocess jvms({"/bin/sh", "-c", loop}, false);
  // The daemon follows the churn and the JVMs (and their children): what else
  // runs on a shared build machine (compilers mapping 100 MB libraries) would
  // make its RSS move with that machine's load, not with arcprof's state.
  Subprocess daemon({kArcprof, "continuous", "--store", store, "--window", "10s", "-p",
                     std::to_string(churn.pid()) + "," + std::to_string(jvms.pid())});
  ASSERT_TRUE(daemon.WaitForStderr("continuous capture", 30)) << daemon.stderr_text();

  std::vector<std::pair<int, uint64_t>> rss;  // (second, KiB)
  std::vector<std::pair<int, size_t>> fds;
  const auto start = std::chrono::steady_clock::now();
  // Sampled while the churn runs (the daemon ends by itself, writing its
  // last window, when the followed processes are gone).
  for (int s = 0; s <= kSeconds - 5; s += 5) {
    std::this_thread::sleep_until(start + std::chrono::seconds(s));
    daemon.WaitForStderr("\x01", 0.01);  // keep its stderr pipe drained
    rss.emplace_back(s, RssKb(daemon.pid()));
    fds.emplace_back(s, OpenFds(daemon.pid()));
  }
  ASSERT_EQ(churn.Wait(), 0);
  ASSERT_EQ(jvms.Wait(), 0);
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();

  std::ostringstream series;
  for (size_t i = 0; i < rss.size(); ++i)
    series << rss[i].first << "s " << rss[i].second / 1024 << " MB " << fds[i].second << " fds\n";
  // Growth is the trend, not the noise: RSS moves by +-10% from one 5 s
  // sample to the next with the window being built and the heap's free
  // lists. Base: the mean over the 30 s after the warm-up; end: the mean
  // over the last 30 s.
  const int last = rss.back().first;
  uint64_t base_rss = 0, base_n = 0, end_rss = 0, end_n = 0, max_rss = 0;
  size_t base_fds = 0, max_fds = 0;
  for (size_t i = 0; i < rss.size(); ++i) {
    const int s = rss[i].first;
    if (s < kWarmupSeconds) continue;
    if (s < kWarmupSeconds + 30) {
      base_rss += rss[i].second;
      base_fds = std::max(base_fds, fds[i].second);
      ++base_n;
    }
    if (s > last - 30) {
      end_rss += rss[i].second;
      ++end_n;
    }
    max_rss = std::max(max_rss, rss[i].second);
    max_fds = std::max(max_fds, fds[i].second);
  }
  ASSERT_GT(base_n, 0u);
  ASSERT_GT(end_n, 0u);
  base_rss /= base_n;
  end_rss /= end_n;
  // Growth under 10% after the warm-up, and never 150 MB. Runs on the loaded
  // shared machine (docs/performance.md): 82-102 MB over the whole 150 s,
  // +6% from the first 30 s after the warm-up to the last 30 s. Before,
  // off-CPU stacks of every thread ever seen and the symbolizer's state of
  // the machine's other processes made it grow 43 -> 565 MB in 150 s.
  EXPECT_LT(static_cast<double>(end_rss), 1.10 * static_cast<double>(base_rss)) << series.str();
  EXPECT_LT(max_rss, 150u * 1024) << series.str();
  std::cout << "RSS after warm-up " << base_rss / 1024 << " MB, at the end " << end_rss / 1024
            << " MB, max after warm-up " << max_rss / 1024 << " MB\n" << series.str();
  // Open files follow the live processes (and the unwinder's few libdwfl
  // spaces); before, every process seen kept its files open (183 -> 3,672).
  EXPECT_LE(max_fds, std::max<size_t>(2 * base_fds, base_fds + 200)) << series.str();

  // Short processes are named: their samples end in storm_work, not [unknown].
  auto [code, folded] = RunCapture({kArcprof, "export", "--store", store, "--format", "folded",
                                    "--comm", "storm_child"});
  ASSERT_EQ(code, 0) << folded;
  uint64_t total = 0, in_work = 0, unknown_leaf = 0;
  std::istringstream lines(folded);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const uint64_t n = std::stoull(line.substr(space + 1));
    const std::string stack = line.substr(0, space);
    total += n;
    if (stack.find(";storm_work") != std::string::npos) in_work += n;
    // The innermost user frame (the last one before kernel frames).
    std::string user_leaf;
    std::istringstream frames(stack);
    std::string f;
    bool first = true;
    while (std::getline(frames, f, ';')) {
      if (first) { first = false; continue; }  // the process name
      if (f.size() > 4 && f.compare(f.size() - 4, 4, "_[k]") == 0) break;
      user_leaf = f;
    }
    if (user_leaf == "[unknown]") unknown_leaf += n;
  }
  ASSERT_GT(total, 200u) << folded.substr(0, 2000);
  EXPECT_GE(static_cast<double>(in_work), 0.5 * static_cast<double>(total)) << folded.substr(0, 4000);
  // 3 ms processes spend a good part of their life in fork/exec, where the
  // user stack is the spawning parent's (a vfork child) or not mapped yet:
  // measured 12% [unknown] leaves under this machine's load.
  EXPECT_LE(static_cast<double>(unknown_leaf), 0.2 * static_cast<double>(total)) << folded.substr(0, 4000);
}

}  // namespace
}  // namespace arcprof::testing
