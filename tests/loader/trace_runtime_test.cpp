// `arcprof trace` against a real program with known call counts
// (tests/programs/trace_target.cpp), real uprobes and real BPF.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/loader/runtime_util.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kTarget = std::string(ARCPROF_TEST_PROGRAMS) + "/trace_target";
// The slowest the untraced part may run traced (median chunk time, the better
// of two alternating rounds); set from 10 runs on the loaded build machine
// (commit body: 10 runs, best of two 0.993-1.000, single rounds up to 1.041).
constexpr double kOutsideMaxRatio = 1.15;

// Program ids and link ids that process `pid` holds (its fds' fdinfo; the
// bpftool of Debian 12 lists neither uprobe_multi links nor their holders).
std::pair<std::set<uint64_t>, std::set<uint64_t>> HeldBy(pid_t pid) {
  std::set<uint64_t> progs, links;
  const std::filesystem::path proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator(proc / "fd", ec)) {
    std::error_code link_ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), link_ec);
    if (link_ec || (target != "anon_inode:bpf-prog" && target != "anon_inode:bpf_link")) continue;
    std::ifstream info(proc / "fdinfo" / fd.path().filename());
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("prog_id:", 0) == 0) progs.insert(std::stoull(line.substr(8)));
      if (line.rfind("link_id:", 0) == 0) links.insert(std::stoull(line.substr(8)));
    }
  }
  return {progs, links};
}

bool Exists(const char* what, uint64_t id) {
  return RunCapture({"/usr/sbin/bpftool", what, "show", "id", std::to_string(id)}).first == 0;
}

std::string LastLine(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

TEST(TraceRuntime, ExactCountsInAndOnlyInTheSubgraph) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir dir;
  const std::string out = dir.path("t.db");
  constexpr int kThreads = 3, kRoots = 4, kDepth = 6;
  Subprocess run({kArcprof, "trace", "--root", "traced_root", "-o", out, "--", kTarget, "counts",
                  std::to_string(kThreads), std::to_string(kRoots), std::to_string(kDepth)});
  ASSERT_EQ(run.Wait(), 0) << run.stderr_text();
  const Profile p = LoadCapture(out);
  ASSERT_TRUE(p.ValueIndex("calls")) << "no calls value type";
  ASSERT_TRUE(p.ValueIndex("wall")) << "no wall value type";
  const TraceCounts c = CountUnderRoot(p, "traced_root");
  const uint64_t roots = kThreads * kRoots;
  // Per root call: recurse(kDepth) is kDepth+1 calls, each calling
  // shared_leaf once, and 10 more shared_leaf calls; one throw through
  // throw_mid and thrower, one longjmp through jump_mid and jumper.
  EXPECT_EQ(c.calls.at("traced_root"), roots);
  EXPECT_EQ(c.calls.at("recurse"), roots * (kDepth + 1));
  EXPECT_EQ(c.calls.at("shared_leaf"), roots * (kDepth + 1 + 10));
  EXPECT_EQ(c.calls.at("throw_mid"), roots);
  EXPECT_EQ(c.calls.at("thrower"), roots);
  EXPECT_EQ(c.calls.at("jump_mid"), roots);
  EXPECT_EQ(c.calls.at("jumper"), roots);
  // outside_root calls shared_leaf and recurse 1,000 times each way, all
  // probed, none under the root: none counted.
  EXPECT_EQ(c.calls.count("outside_root"), 0u);
  EXPECT_EQ(c.calls_outside, 0u);
  // Threads: every worker thread made its own kRoots root calls.
  ASSERT_EQ(c.root_calls.size(), static_cast<size_t>(kThreads));
  for (const auto& [tid, n] : c.root_calls) EXPECT_EQ(n, static_cast<uint64_t>(kRoots)) << "tid " << tid;
  // Each throw and longjmp left two calls that never returned.
  EXPECT_EQ(p.counters.at("trace.unreturned_calls"), static_cast<int64_t>(roots * 4));
  EXPECT_EQ(p.counters.at("trace.lost_nodes"), 0);
  EXPECT_EQ(p.counters.at("trace.depth_overflow"), 0);
  EXPECT_GT(c.wall_under_root, 0u);
  EXPECT_NE(run.stderr_text().find("calibration"), std::string::npos) << run.stderr_text();
  // Recursion: recurse nested kDepth+1 deep, each level called once per root.
  for (const ThreadRecord& t : p.threads) {
    const auto calls_type = *p.ValueIndex("calls");
    std::map<uint32_t, uint32_t> depth;  // node -> recurse nesting
    for (uint32_t v = 1; v < t.tree.size(); ++v) {
      const auto& node = t.tree.nodes()[v];
      const bool rec = p.frames.at(node.frame).symbol == "recurse";
      const uint32_t d = (depth.count(node.parent) ? depth[node.parent] : 0) + (rec ? 1 : 0);
      depth[v] = d;
      if (rec && t.tree.value(v, calls_type) > 0) {
        EXPECT_LE(d, static_cast<uint32_t>(kDepth + 1));
        EXPECT_EQ(t.tree.value(v, calls_type), static_cast<uint64_t>(kRoots)) << "depth " << d;
      }
    }
  }
  // Every view reads the values; pprof carries both sample types.
  EXPECT_EQ(RunCapture({kArcprof, "report", "-i", out, "--view", "xtree", "--metric", "calls"}).first, 0);
  EXPECT_EQ(RunCapture({kArcprof, "report", "-i", out, "--view", "xprof", "--metric", "wall"}).first, 0);
  const std::string pprof = dir.path("t.pb.gz");
  ASSERT_EQ(RunCapture({kArcprof, "export", "-i", out, "--format", "pprof", "-o", pprof}).first, 0);
  if (access("/usr/bin/go", X_OK) == 0) {
    auto [code, raw] = RunCapture({"/usr/bin/env", "HOME=" + dir.dir(), "GOCACHE=" + dir.path("gocache"),
                                   "GOTOOLCHAIN=local", "/usr/bin/go", "tool", "pprof", "-raw", pprof});
    ASSERT_EQ(code, 0);
    EXPECT_NE(raw.find("calls/count"), std::string::npos) << raw.substr(0, 400);
    EXPECT_NE(raw.find("wall/nanoseconds"), std::string::npos) << raw.substr(0, 400);
  }
  // diff of two traces by calls: the same program, the same shares.
  const std::string out2 = dir.path("t2.db");
  Subprocess again({kArcprof, "trace", "-q", "--root", "traced_root", "-o", out2, "--", kTarget, "counts",
                    std::to_string(kThreads), std::to_string(kRoots), std::to_string(kDepth)});
  ASSERT_EQ(again.Wait(), 0) << again.stderr_text();
  auto [diff_code, diff] = RunCapture({kArcprof, "diff", out, out2, "--metric", "calls", "--format", "json",
                                       "-o", dir.path("d.svg"), "--comm", "trace_target"});
  ASSERT_EQ(diff_code, 0);
  auto json = nlohmann::json::parse(diff, nullptr, false);
  ASSERT_TRUE(json.is_object()) << diff;
  EXPECT_EQ(json.value("before_samples", 0), json.value("after_samples", 1)) << diff;
}

TEST(TraceRuntime, RunningProcessByPid) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir dir;
  Subprocess target({kTarget, "loop", "30"}, false);
  const std::string out = dir.path("p.db");
  Subprocess run({kArcprof, "trace", "--root", "traced_root", "-p", std::to_string(target.pid()), "-d", "2",
                  "-o", out});
  ASSERT_EQ(run.Wait(), 0) << run.stderr_text();
  target.Signal(SIGKILL);
  target.Wait();
  const TraceCounts c = CountUnderRoot(LoadCapture(out), "traced_root");
  ASSERT_GT(c.calls.count("traced_root"), 0u) << run.stderr_text();
  const uint64_t roots = c.calls.at("traced_root");
  EXPECT_GE(roots, 5u);
  // Per root call 6 calls of recurse (depth 5); a root running when the
  // probes were removed may have made fewer. A root running when they went
  // in is not counted at all (nor is anything under it).
  EXPECT_LE(c.calls.at("recurse"), roots * 6);
  EXPECT_GE(c.calls.at("recurse"), (roots - 1) * 6);
  EXPECT_EQ(c.calls_outside, 0u);
}

TEST(TraceRuntime, BadInputIsOneLineAndExit2) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir dir;
  {
    Subprocess run({kArcprof, "trace", "--root", "no_such_function", "-o", dir.path("a.db"), "--", kTarget,
                    "counts", "1", "1", "1"});
    EXPECT_EQ(run.Wait(), 2);
    EXPECT_NE(LastLine(run.stderr_text()).find("no function no_such_function"), std::string::npos)
        << run.stderr_text();
    EXPECT_FALSE(std::filesystem::exists(dir.path("a.db")));
  }
  {
    // outside_chunk exists but `counts` never calls it.
    Subprocess run({kArcprof, "trace", "--root", "outside_chunk", "-o", dir.path("b.db"), "--", kTarget,
                    "counts", "1", "1", "1"});
    EXPECT_EQ(run.Wait(), 2);
    EXPECT_NE(LastLine(run.stderr_text()).find("outside_chunk was not called"), std::string::npos)
        << run.stderr_text();
  }
  {
    Subprocess run({kArcprof, "trace", "--root", "traced_root", "-p", "4194000", "-o", dir.path("c.db")});
    EXPECT_EQ(run.Wait(), 2);
    EXPECT_NE(LastLine(run.stderr_text()).find("no such process"), std::string::npos) << run.stderr_text();
  }
  {
    // A process of another user, asked for by a user through sudo.
    Subprocess other({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", kTarget, "loop", "20"},
                     false);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Subprocess run({"/usr/bin/env", "SUDO_UID=1000", kArcprof, "trace", "--root", "traced_root", "-p",
                    std::to_string(other.pid()), "-o", dir.path("d.db")});
    EXPECT_EQ(run.Wait(), 2);
    EXPECT_NE(LastLine(run.stderr_text()).find("not to you"), std::string::npos) << run.stderr_text();
    other.Signal(SIGKILL);
    other.Wait();
  }
  {
    // A process that exits while traced: its trace so far is kept.
    Subprocess target({kTarget, "loop", "60"}, false);
    Subprocess run({kArcprof, "trace", "--root", "traced_root", "-p", std::to_string(target.pid()), "-d", "60",
                    "-o", dir.path("e.db")});
    ASSERT_TRUE(run.WaitForStderr("functions probed", 60)) << run.stderr_text();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    target.Signal(SIGKILL);
    target.Wait();  // reaped: it is gone, not a zombie
    EXPECT_EQ(run.Wait(), 2);
    EXPECT_NE(LastLine(run.stderr_text()).find("exited while traced"), std::string::npos) << run.stderr_text();
    EXPECT_TRUE(std::filesystem::exists(dir.path("e.db")));
  }
}

TEST(TraceRuntime, SigkillLeavesNoProbe) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ARCPROF_REQUIRE_TOOL("/usr/sbin/bpftool", "bpftool");
  TempDir dir;
  Subprocess target({kTarget, "loop", "60"}, false);
  Subprocess run({kArcprof, "trace", "--root", "traced_root", "-p", std::to_string(target.pid()), "-d", "30",
                  "-o", dir.path("k.db")});
  ASSERT_TRUE(run.WaitForStderr("functions probed", 30)) << run.stderr_text();
  const auto [progs, links] = HeldBy(run.pid());
  EXPECT_GE(links.size(), 2u) << "the uprobe_multi links of the trace";
  run.Signal(SIGKILL);
  run.Wait();
  // The kernel frees links and programs once their last descriptor is gone.
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    gone = true;
    for (uint64_t id : links) gone = gone && !Exists("link", id);
    for (uint64_t id : progs) gone = gone && !Exists("prog", id);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "links or programs of the killed arcprof are still loaded";
  // No breakpoint left in the program: it keeps running.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(kill(target.pid(), 0), 0) << "the traced program died";
  int status = 0;
  EXPECT_EQ(waitpid(target.pid(), &status, WNOHANG), 0) << "the traced program exited";
  target.Signal(SIGKILL);
  target.Wait();
}

// The median time of a chunk of work that calls nothing probed, in a
// program whose root is traced every 20 chunks, against the same program
// untraced, run alternately.
TEST(TraceRuntime, CodeOutsideTheSubgraphRunsAtItsSpeed) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir dir;
  auto median_of = [](const std::string& text) -> double {
    const size_t at = text.find("median_ns ");
    return at == std::string::npos ? 0.0 : std::stod(text.substr(at + 10));
  };
  std::vector<double> ratios;
  for (int round = 0; round < 2; ++round) {
    auto [plain_code, plain] = RunCapture({kTarget, "speed", "2", "20"});
    ASSERT_EQ(plain_code, 0);
    auto [traced_code, traced] = RunCapture({kArcprof, "trace", "-q", "--root", "traced_root", "-o",
                                             dir.path("s.db"), "--", kTarget, "speed", "2", "20"});
    ASSERT_EQ(traced_code, 0);
    const double a = median_of(plain), b = median_of(traced);
    ASSERT_GT(a, 0);
    ASSERT_GT(b, 0);
    ratios.push_back(b / a);
  }
  const double best = *std::min_element(ratios.begin(), ratios.end());
  EXPECT_LT(best, kOutsideMaxRatio) << "outside work slowed by tracing: ratios " << ratios[0]
                                                   << ", " << ratios[1];
  RecordProperty("outside_ratio", std::to_string(best));
  printf("outside-speed ratio traced/plain: %.3f (%.3f, %.3f)\n", best, ratios[0], ratios[1]);
}

}  // namespace
}  // namespace arcprof::testing
