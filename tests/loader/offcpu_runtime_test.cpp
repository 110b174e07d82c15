// record --off-cpu against real blocking: offcpu_mix sleeps 1 s in nanosleep,
// blocks 1 s on a pipe read and spins 1 s. The wall view must split its main
// thread into thirds with the blocking functions named under main; the blocked
// time per kernel path must agree with libbpf-tools' offcputime watching the
// same run; the pprof export must carry the offcpu type for go tool pprof.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "model/metric.h"
#include "tests/loader/runtime_util.h"

#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kMix = std::string(ARCPROF_TEST_PROGRAMS) + "/offcpu_mix";
const std::string kOffcputime = "/usr/sbin/offcputime";
const std::string kGo = "/usr/bin/go";

// The thread whose tree holds `symbol` (the main thread of offcpu_mix).
int ThreadWith(const Profile& p, const std::string& symbol) {
  for (size_t t = 0; t < p.threads.size(); ++t) {
    for (const auto& node : p.threads[t].tree.nodes()) {
      if (node.frame != CallTree::kNoFrame && p.frames.at(node.frame).symbol == symbol) {
        return static_cast<int>(t);
      }
    }
  }
  return -1;
}

// Off-CPU ns of the stacks of thread `t` whose frames include `symbol`.
uint64_t OffCpuUnder(const Profile& p, size_t t, const std::string& symbol) {
  const CallTree& tree = p.threads[t].tree;
  const auto& nodes = tree.nodes();
  const size_t offcpu = p.ValueIndex("offcpu").value_or(p.value_types.size());
  uint64_t sum = 0;
  for (uint32_t n = 1; n < nodes.size(); ++n) {
    if (tree.value(n, offcpu) == 0) continue;
    for (size_t cur = n; cur != 0; cur = nodes[cur].parent) {
      if (p.frames.at(nodes[cur].frame).symbol == symbol) {
        sum += tree.value(n, offcpu);
        break;
      }
    }
  }
  return sum;
}

class OffCpuRuntime : public ::testing::Test {
 protected:
  void SetUp() override { ARCPROF_REQUIRE_RECORD_CAPABLE(); }
  TempDir tmp_;
};

// xtree rows under main: "level n base cum name".
std::map<std::string, double> CumByName(const std::string& text, std::string* root_name) {
  std::map<std::string, double> cum;
  std::istringstream lines(text);
  std::string line;
  const std::regex row(R"(^\s*(\d+)\s+\d+\s+\d+\s+(\d+)\s+(\S.*)$)");
  std::smatch m;
  while (std::getline(lines, line)) {
    if (!std::regex_match(line, m, row)) continue;
    if (m[1] == "0") *root_name = m[3];
    cum.emplace(m[3], std::stod(m[2]));  // first (outermost) occurrence
  }
  return cum;
}

TEST_F(OffCpuRuntime, WallViewSplitsSleepPipeAndCpuIntoThirds) {
  // Off-CPU stacks unwind like samples: dwarf and hybrid name the caller of
  // libc's frameless wrappers (fp mode cannot, for samples either).
  for (const char* mode : {"hybrid", "dwarf"}) {
    SCOPED_TRACE(mode);
    const std::string db = tmp_.path(std::string(mode) + ".db");
    Subprocess rec({kArcprof, "record", "--off-cpu", "--call-graph", mode, "-o", db, "--", kMix, "1"});
    ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
    Profile p = LoadCapture(db);
    const int t = ThreadWith(p, "sleep_phase");
    ASSERT_GE(t, 0) << "no thread has sleep_phase";
    const std::string tid = std::to_string(p.threads[static_cast<size_t>(t)].tid);

    auto [code, text] = RunCapture({kArcprof, "report", "-i", db, "--view", "xtree", "--metric",
                                    "wall", "--tid", tid});
    ASSERT_EQ(code, 0) << text;
    std::string root;
    const auto cum = CumByName(text, &root);
    ASSERT_TRUE(cum.count(root)) << text;
    const double total = cum.at(root);
    // 3 s of wall clock, in microseconds (the child and exec add a little).
    EXPECT_NEAR(total, 3e6, 0.3e6) << text;
    for (const char* phase : {"sleep_phase", "pipe_phase", "burn_phase"}) {
      ASSERT_TRUE(cum.count(phase)) << phase << " missing\n" << text;
      EXPECT_NEAR(cum.at(phase) / total, 1.0 / 3, 0.03) << phase << "\n" << text;
    }
    // The blocking functions are named, under main, with the reason at the leaf.
    const auto stacks = Stacks(p, [&](const ThreadRecord& r) {
      return r.tid == p.threads[static_cast<size_t>(t)].tid;
    }, "offcpu");
    bool sleep_named = false, read_named = false;
    for (const auto& entry : stacks) {
      const std::vector<std::string>& stack = entry.first;
      const uint64_t us = entry.second;
      auto has = [&stack](const std::string& s) {
        return std::find(stack.begin(), stack.end(), s) != stack.end();
      };
      if (us < 900000) continue;
      if (has("main") && has("sleep_phase") && stack.back() == "off-cpu:sleep" &&
          (has("__nanosleep") || has("clock_nanosleep") || has("nanosleep"))) {
        sleep_named = true;
      }
      if (has("main") && has("pipe_phase") && (has("read") || has("__libc_read")) &&
          stack.back() == "off-cpu:io") {
        read_named = true;
      }
    }
    EXPECT_TRUE(sleep_named) << text;
    EXPECT_TRUE(read_named) << text;
  }
}

// offcputime's lines for one stack: kernel frames (leaf first), user frames,
// "-  comm (pid)", then the microseconds off CPU.
std::vector<std::pair<std::vector<std::string>, uint64_t>> ParseOffcputime(const std::string& out) {
  std::vector<std::pair<std::vector<std::string>, uint64_t>> stacks;
  std::vector<std::string> frames;
  std::istringstream lines(out);
  std::string line;
  const std::regex value(R"(^\s+(\d+)\s*$)");
  std::smatch m;
  while (std::getline(lines, line)) {
    if (line.empty()) {
      frames.clear();
    } else if (std::regex_match(line, m, value)) {
      stacks.emplace_back(frames, std::stoull(m[1]));
      frames.clear();
    } else {
      const size_t first = line.find_first_not_of(' ');
      if (first != std::string::npos) frames.push_back(line.substr(first));
    }
  }
  return stacks;
}

TEST_F(OffCpuRuntime, BlockedTimePerStackAgreesWithOffcputime) {
  if (access(kOffcputime.c_str(), X_OK) != 0) {
    if (InCi()) FAIL() << kOffcputime << " missing: scripts/install-deps.sh installs libbpf-tools";
    GTEST_SKIP() << kOffcputime << " missing (Debian package libbpf-tools)";
  }
  const std::string db = tmp_.path("cmp.db");
  // offcpu_mix first waits 2 s in poll(): offcputime attaches meanwhile.
  Subprocess rec({kArcprof, "record", "--off-cpu", "-o", db, "--", kMix, "1", "2"});
  ASSERT_TRUE(rec.WaitForStderr("recording command", 20)) << rec.stderr_text();
  std::string children;
  std::ifstream(("/proc/" + std::to_string(rec.pid()) + "/task/" + std::to_string(rec.pid()) +
                 "/children"))
      >> children;
  ASSERT_FALSE(children.empty()) << "no child of arcprof";
  std::pair<int, std::string> tool;
  std::thread watcher([&] {
    tool = RunCapture({kOffcputime, "-p", children, "--stack-storage-size", "16384", "7"});
  });
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  watcher.join();
  ASSERT_EQ(tool.first, 0) << tool.second;

  // The main thread's nanosleep and pipe read, by their kernel paths (the
  // process has exited when offcputime names user frames, so it names none).
  std::map<std::string, double> tool_us;
  for (const auto& [frames, us] : ParseOffcputime(tool.second)) {
    for (const char* path : {"do_nanosleep", "anon_pipe_read", "pipe_read"}) {
      if (std::find(frames.begin(), frames.end(), path) != frames.end()) tool_us[path] += us;
    }
  }
  Profile p = LoadCapture(db);
  const int t = ThreadWith(p, "sleep_phase");
  ASSERT_GE(t, 0);
  std::map<std::string, double> ours_us;
  for (const char* path : {"do_nanosleep", "anon_pipe_read", "pipe_read"}) {
    ours_us[path] = static_cast<double>(OffCpuUnder(p, static_cast<size_t>(t), path)) / 1000.0;
  }
  const char* pipe_path = ours_us["anon_pipe_read"] > 0 ? "anon_pipe_read" : "pipe_read";
  for (const char* path : {"do_nanosleep", pipe_path}) {
    SCOPED_TRACE(path);
    EXPECT_NEAR(ours_us[path], 1e6, 0.1e6);
    // Both tools time the same intervals from sched_switch to sched_switch.
    EXPECT_NEAR(ours_us[path], tool_us[path], 0.03 * tool_us[path] + 20000)
        << "arcprof " << ours_us[path] << " us, offcputime " << tool_us[path] << " us";
  }
}

TEST_F(OffCpuRuntime, PprofCarriesOffCpuForGoToolPprof) {
  ARCPROF_REQUIRE_TOOL(kGo, "golang-go");
  const std::string db = tmp_.path("pp.db");
  const std::string pb = tmp_.path("pp.pb.gz");
  Subprocess rec({kArcprof, "record", "-o", db, "--", kMix, "1"});  // off-CPU is the default here
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  auto [export_code, unused] =
      RunCapture({kArcprof, "export", "--format", "pprof", "--metric", "offcpu", "-i", db, "-o", pb});
  ASSERT_EQ(export_code, 0);
  for (const char* index : {"offcpu", "wall", "samples"}) {
    SCOPED_TRACE(index);
    auto [code, top] = RunCapture({"/usr/bin/env", "HOME=" + tmp_.dir(), "GOCACHE=" + tmp_.path("gocache"),
                                   "GOPATH=" + tmp_.path("gopath"), "GOTOOLCHAIN=local", "GOFLAGS=", kGo,
                                   "tool", "pprof", "-top", "-cum", "-unit=ms", "-nodecount=200",
                                   std::string("-sample_index=") + index, pb});
    ASSERT_EQ(code, 0) << top;
    // "flat flat% sum% cum cum% name" with values in ms (samples: counts).
    std::map<std::string, double> cum;
    std::istringstream lines(top);
    std::string line;
    const std::regex row(R"(^\s*([\d.]+)(ms)?\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)(ms)?\s+[\d.]+%\s+(.+)$)");
    std::smatch m;
    while (std::getline(lines, line)) {
      if (std::regex_match(line, m, row)) cum[m[5]] = std::stod(m[3]);
    }
    if (std::string(index) == "samples") {
      EXPECT_EQ(cum.count("sleep_phase"), 0u) << "no samples while sleeping\n" << top;
      EXPECT_GT(cum["burn_phase"], 0) << top;
      continue;
    }
    EXPECT_NEAR(cum["sleep_phase"], 1000, 100) << top;
    EXPECT_NEAR(cum["off-cpu:io"], 1000, 100) << top;  // the pipe read
    // The pipe's writer is a forked child sleeping up to 1 s under pipe_phase too.
    EXPECT_GT(cum["pipe_phase"], 1700) << top;
    EXPECT_LT(cum["pipe_phase"], 2600) << top;
    if (std::string(index) == "wall") EXPECT_NEAR(cum["burn_phase"], 1000, 100) << top;
  }
}

}  // namespace
}  // namespace arcprof::testing
