// Runtime tests: the real arcprof binary, real BPF programs in this kernel,
// real processes with known frames.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kGroundTruth = std::string(ARCPROF_TEST_PROGRAMS) + "/ground_truth";
const std::string kStormChild = std::string(ARCPROF_TEST_PROGRAMS) + "/storm_child";
const std::string kThreadChurn = std::string(ARCPROF_TEST_PROGRAMS) + "/thread_churn";
const std::string kPidReuse = std::string(ARCPROF_TEST_PROGRAMS) + "/pid_reuse";
// ShortCommandPeakRssIsSmall's threshold (KiB): see there.
constexpr long kShortCommandPeakRssKib = 60 * 1024;

// Seconds the process has run on a CPU (/proc/PID/schedstat, nanoseconds).
double OnCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/schedstat");
  double ns = 0;
  in >> ns;
  return ns / 1e9;
}

bool IsGroundTruth(const ThreadRecord& t) { return t.comm == "ground_truth"; }

double HeavyShare(const std::map<std::string, uint64_t>& leaves) {
  auto get = [&](const char* s) {
    auto it = leaves.find(s);
    return it == leaves.end() ? 0.0 : static_cast<double>(it->second);
  };
  const double heavy = get("f_heavy"), light = get("f_light");
  return heavy + light > 0 ? heavy / (heavy + light) : -1;
}

// Whether gcc gave f_heavy a frame of its own (push %rbp at its entry). When it
// did not, a frame-pointer walk from f_heavy skips its caller `outer`.
bool HeavyHasOwnFrame() {
  auto [code, text] = RunCapture({"/usr/bin/objdump", "-d", "--no-show-raw-insn", kGroundTruth});
  const size_t at = text.find("<f_heavy>:");
  if (at == std::string::npos) return false;
  const std::string head = text.substr(at, 200);
  return head.find("push   %rbp") != std::string::npos;
}

TEST(RecordRuntime, GroundTruthCommandGivesThreeToOne) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("gt.db");
  ArcprofRunPrograms programs;
  Subprocess rec({kArcprof, "record", "-o", db, "--", kGroundTruth, "4"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  struct stat st {};
  ASSERT_EQ(stat(db.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  Profile p = LoadCapture(db);
  const auto leaves = LeafCounts(p, IsGroundTruth);
  const double share = HeavyShare(leaves);
  EXPECT_NEAR(share, 0.75, 0.03) << "f_heavy=" << leaves.count("f_heavy");
  // Cross-check with the kernel's account of the program's CPU time: one
  // sample per 1/999 s of CPU, within 10%.
  uint64_t total = 0;
  for (const auto& [sym, n] : leaves) total += n;
  const size_t at = rec.stderr_text().find("ground_truth cpu_ms=");
  ASSERT_NE(at, std::string::npos) << rec.stderr_text();
  const double cpu_ms = std::stod(rec.stderr_text().substr(at + 20));
  EXPECT_NEAR(static_cast<double>(total), cpu_ms * 0.999, cpu_ms * 0.999 * 0.10);
  // Only the command (and its children) was sampled.
  for (const ThreadRecord& t : p.threads) EXPECT_EQ(t.comm, "ground_truth");
  EXPECT_EQ(p.meta.event, "cpu-clock");
  EXPECT_EQ(p.meta.frequency_hz, 999u);
  // Build-ids are kept for every mapped file that has one (cross-checked
  // against the ELF note as readelf prints it).
  auto [code, notes] = RunCapture({"/usr/bin/readelf", "-n", kGroundTruth});
  const size_t id_at = notes.find("Build ID: ");
  ASSERT_NE(id_at, std::string::npos);
  const std::string build_id = notes.substr(id_at + 10, 40);
  bool found = false;
  for (const auto& [module, id] : p.build_ids) found = found || id == build_id;
  EXPECT_TRUE(found) << "build-id " << build_id << " of ground_truth not in the capture";

  std::string left;
  EXPECT_TRUE(programs.NothingLeft(&left)) << left;
}

// gcc 12 gives f_heavy no frame of its own (a leaf), so a plain frame-pointer
// walk from it skips `outer`; every mode must still show main;outer;f_heavy
// (fp repairs the leaf with the unwind tables, dwarf/hybrid unwind with them).
class FoldedModes : public ::testing::TestWithParam<std::string> {};

TEST_P(FoldedModes, FoldedExportShowsMainOuterLeaf) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  EXPECT_FALSE(HeavyHasOwnFrame()) << "the test program no longer has a frameless leaf";
  TempDir tmp;
  const std::string db = tmp.path("gt.db");
  Subprocess rec({kArcprof, "record", "-q", "--call-graph", GetParam(), "-o", db, "--",
                  kGroundTruth, "2"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  auto [code, folded] = RunCapture({kArcprof, "export", "--format", "folded", "-i", db});
  ASSERT_EQ(code, 0);
  uint64_t heavy_samples = 0, with_outer = 0;
  std::istringstream in(folded);
  for (std::string line; std::getline(in, line);) {
    const size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    const std::string stack = line.substr(0, sp);
    const uint64_t n = std::stoull(line.substr(sp + 1));
    EXPECT_EQ(stack.rfind("ground_truth;", 0), 0u) << line;  // comm first
    if (stack.size() >= 8 && stack.compare(stack.size() - 8, 8, ";f_heavy") == 0) {
      heavy_samples += n;
      if (stack.find(";main;outer;f_heavy") != std::string::npos) with_outer += n;
    }
  }
  // ~1,500 on an idle machine, 415-448 seen under heavy load: enough that
  // 98% is a real bar (at most a few stacks without outer).
  ASSERT_GT(heavy_samples, 200u);
  EXPECT_GE(with_outer, heavy_samples * 98 / 100) << folded;
}

INSTANTIATE_TEST_SUITE_P(Modes, FoldedModes, ::testing::Values("fp", "hybrid", "dwarf"));

TEST(RecordRuntime, WholeMachineSeesTwoProgramsWithTheirPids) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("sys.db");
  Subprocess a({kGroundTruth, "5"}, false), b({kGroundTruth, "5", "1:3"}, false);
  usleep(200 * 1000);
  Subprocess rec({kArcprof, "record", "-d", "3", "-o", db});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  const auto share_a = HeavyShare(LeafCounts(p, [&](const ThreadRecord& t) {
    return t.pid == static_cast<uint32_t>(a.pid());
  }));
  const auto share_b = HeavyShare(LeafCounts(p, [&](const ThreadRecord& t) {
    return t.pid == static_cast<uint32_t>(b.pid());
  }));
  EXPECT_NEAR(share_a, 0.75, 0.04);
  EXPECT_NEAR(share_b, 0.25, 0.04);
  std::set<std::string> comms;
  for (const ThreadRecord& t : p.threads) {
    if (t.pid == static_cast<uint32_t>(a.pid()) || t.pid == static_cast<uint32_t>(b.pid())) {
      comms.insert(t.process_comm);
      EXPECT_NE(t.cmdline.find("ground_truth"), std::string::npos) << t.cmdline;
    }
  }
  EXPECT_EQ(comms, std::set<std::string>{"ground_truth"});
  EXPECT_GT(p.threads.size(), 2u);  // other processes of the machine (at least the idle task)
}

TEST(RecordRuntime, PidFilterKeepsOnlyThatProcess) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("pid.db");
  // They outlive the recording however long arcprof takes to load its
  // programs (seconds on a loaded machine), and are killed after it.
  Subprocess a({kGroundTruth, "20"}, false), b({kGroundTruth, "20"}, false);
  usleep(100 * 1000);
  Subprocess rec({kArcprof, "record", "-d", "2", "-F", "499", "-p", std::to_string(a.pid()),
                  "-o", db});
  ASSERT_TRUE(rec.WaitForStderr("recording", 20)) << rec.stderr_text();
  const double cpu_before = OnCpuSeconds(a.pid());
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  const double cpu_after = OnCpuSeconds(a.pid());
  Profile p = LoadCapture(db);
  ASSERT_FALSE(p.threads.empty());
  uint64_t total = 0;
  for (size_t t = 0; t < p.threads.size(); ++t) {
    EXPECT_EQ(p.threads[t].pid, static_cast<uint32_t>(a.pid()));
    total += p.threads[t].tree.total();
  }
  // The kernel's own account of the target's CPU time over the recording.
  const double expected = (cpu_after - cpu_before) * 499;
  EXPECT_NEAR(static_cast<double>(total), expected, 0.1 * expected);
  EXPECT_EQ(p.meta.frequency_hz, 499u);
}

// 200 short processes of a binary that is deleted once they are gone: their
// samples must still be symbolized.
TEST(RecordRuntime, ProcessStormIsSymbolized) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("storm.db");
  const std::string victim = tmp.path("storm_victim");
  std::filesystem::copy_file(kStormChild, victim);
  Subprocess rec({kArcprof, "record", "-o", db});
  ASSERT_TRUE(rec.WaitForStderr("recording", 20)) << rec.stderr_text();
  for (int i = 0; i < 200; ++i) {
    Subprocess child({victim, "20"}, false);
    ASSERT_EQ(child.Wait(), 0);
  }
  std::filesystem::remove(victim);
  rec.Signal(SIGINT);
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();

  Profile p = LoadCapture(db);
  uint64_t samples = 0, symbolized = 0, in_work = 0;
  std::set<uint32_t> pids;
  for (size_t t = 0; t < p.threads.size(); ++t) {
    if (p.threads[t].comm != "storm_victim") continue;
    pids.insert(p.threads[t].pid);
    const CallTree& tree = p.threads[t].tree;
    const auto& nodes = tree.nodes();
    for (size_t n = 1; n < nodes.size(); ++n) {
      if (tree.value(static_cast<uint32_t>(n), kSamplesValue) == 0) continue;
      samples += tree.value(static_cast<uint32_t>(n), kSamplesValue);
      // The innermost user frame decides: is the code the process ran named?
      // Samples in the exit path after the address space is gone have no
      // user frames: there the kernel leaf decides.
      bool named = false, work = false, user_seen = false;
      for (size_t cur = n; cur != 0; cur = nodes[cur].parent) {
        const FrameRecord& f = p.frames.at(nodes[cur].frame);
        if (f.kind == FrameKind::kKernel) continue;
        user_seen = true;
        named = !f.symbol.empty();
        work = f.symbol == "storm_work";
        break;
      }
      if (!user_seen) named = !p.frames.at(nodes[n].frame).symbol.empty();
      if (named) symbolized += tree.value(static_cast<uint32_t>(n), kSamplesValue);
      if (work) in_work += tree.value(static_cast<uint32_t>(n), kSamplesValue);
    }
  }
  EXPECT_GE(pids.size(), 190u);
  ASSERT_GT(samples, 2000u);  // 200 x 20 ms at 999 Hz = 4000
  EXPECT_GE(static_cast<double>(symbolized), 0.99 * static_cast<double>(samples))
      << symbolized << " of " << samples;
  // The rest is exec, the dynamic loader and exit: about 10% for 20 ms processes.
  EXPECT_GE(static_cast<double>(in_work), 0.8 * static_cast<double>(samples));
}

// Peak RSS (KiB, ru_maxrss) of a run of argv to completion, and its exit code.
std::pair<int, long> PeakRssKib(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), usage.ru_maxrss};
}

// A short command must not pay for a long one: the sample ring starts small
// (grown only while records fill it) and `record -- /bin/true` stays far
// below the 171 MB it took with a fixed 64 MiB ring mapped twice
// (docs/performance.md, "record -- /bin/true"). The threshold is set from
// the spread of ten runs with margin, not at the 50 MB goal.
TEST(RecordRuntime, ShortCommandPeakRssIsSmall) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  long worst = 0;
  for (int i = 0; i < 3; ++i) {
    auto [code, kib] = PeakRssKib({kArcprof, "record", "-q", "-o", tmp.path("true.db"), "--", "/bin/true"});
    ASSERT_EQ(code, 0);
    worst = std::max(worst, kib);
  }
  std::cout << "peak RSS of record -- /bin/true, worst of 3: " << worst << " KiB\n";
  EXPECT_LT(worst, kShortCommandPeakRssKib) << "peak RSS of record -- /bin/true: " << worst << " KiB";
}

// The executable runs on jemalloc (common/heap.h: the churn daemon's CPU) and
// opens capstone only when `trace` decodes code (its relocated tables were
// 3.2 MB of every arcprof's RSS). The command prints its parent's maps.
TEST(RecordRuntime, ArcprofRunsOnJemallocWithoutCapstoneLoaded) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  auto [code, maps] = RunCapture(
      {kArcprof, "record", "-q", "-o", tmp.path("maps.db"), "--", "/bin/sh", "-c", "cat /proc/$PPID/maps"});
  ASSERT_EQ(code, 0) << maps;
  EXPECT_NE(maps.find("/libjemalloc.so"), std::string::npos) << maps;
  EXPECT_EQ(maps.find("/libcapstone.so"), std::string::npos) << maps;
}

// A one-shot record past its thread-record budget folds exited threads into
// "[exited threads]" of their process: the capture holds far fewer records
// than threads, and every sample is still there, in the same functions.
TEST(RecordRuntime, ExitedThreadsFoldPastTheRecordBudget) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("threads.db");
  Subprocess rec({kArcprof, "record", "-q", "--max-thread-records", "64", "-o", db, "--", kThreadChurn, "1200",
                  "2"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  ASSERT_TRUE(p.counters.count("threads_folded")) << "nothing was folded";
  EXPECT_GE(p.counters.at("threads_folded"), 400);
  EXPECT_LT(p.threads.size(), 600u);
  EXPECT_EQ(static_cast<int64_t>(p.total_samples()), p.counters.at("samples_total"));
  uint64_t group = 0, group_work = 0, work = 0;
  for (const ThreadRecord& t : p.threads) {
    const auto leaves = LeafCounts(p, [&](const ThreadRecord& r) { return &r == &t; });
    const uint64_t in_work = leaves.count("thread_work") ? leaves.at("thread_work") : 0;
    work += in_work;
    if (t.tid == 0xffffffffu) {
      EXPECT_EQ(t.comm, "[exited threads]");
      EXPECT_EQ(t.process_comm, "thread_churn");
      group += t.tree.total();
      group_work += in_work;
    }
  }
  std::cout << p.threads.size() << " thread records, " << p.counters.at("threads_folded") << " folded, "
            << work << " samples in thread_work, " << group_work << " of " << group << " in the group\n";
  // 1,200 threads x 2 ms at 999 Hz: about 2,400 samples in thread_work.
  EXPECT_GT(work, 1500u);
  EXPECT_GT(group, 0u);
  EXPECT_GE(static_cast<double>(group_work), 0.8 * static_cast<double>(group)) << group_work << " of " << group;
}

// Records `pid_reuse 1 [sleep]` (tests/programs/pid_reuse.c: two programs one
// after the other under the same pid, chosen with clone3's set_tid) and
// checks that each record holds one program's `metric` and name, never
// both. Returns each program's total, 0 and 0 when skipped; the capture in
// `capture` when given.
std::pair<uint64_t, uint64_t> RecordReusedPid(const std::vector<std::string>& args, const char* metric,
                                              const std::string& first_fn, const std::string& second_fn,
                                              Profile* capture = nullptr) {
  TempDir tmp;
  const std::string db = tmp.path("reuse.db");
  std::vector<std::string> argv = {kArcprof, "record", "-q", "-o", db};
  argv.insert(argv.end(), args.begin(), args.end());
  Subprocess rec(argv);
  const int code = rec.Wait();
  if (code == 77 && !InCi()) {
    std::cout << "clone3 with set_tid is refused here: " << rec.stderr_text();
    return {0, 0};
  }
  EXPECT_EQ(code, 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  uint64_t first = 0, second = 0;
  for (const ThreadRecord& t : p.threads) {
    uint64_t in_first = 0, in_second = 0;
    for (const auto& [stack, n] : Stacks(p, [&](const ThreadRecord& r) { return &r == &t; }, metric)) {
      for (const std::string& f : stack) {
        if (f == first_fn) in_first += n;
        if (f == second_fn) in_second += n;
      }
    }
    if (in_first + in_second == 0) continue;
    std::cout << t.pid << "/" << t.tid << " " << t.comm << " (" << t.process_comm << "): " << in_first
              << " first, " << in_second << " second (" << metric << ")\n";
    EXPECT_TRUE(in_first == 0 || in_second == 0) << "one record holds both programs: " << t.comm;
    EXPECT_EQ(t.comm, in_first > 0 ? "reuse_first" : "reuse_second");
    // The first program's record retired under "[exited processes]" has its
    // name's tid, as in every recording (merges sum it with theirs).
    if (t.pid == kExitedProcessesPid) EXPECT_EQ(t.tid, ExitedProcessesTid(t.comm));
    first += in_first;
    second += in_second;
  }
  if (capture != nullptr) *capture = std::move(p);
  return {first, second};
}

#define SKIP_WITHOUT_SET_TID(totals) \
  if ((totals).first + (totals).second == 0 && !InCi()) GTEST_SKIP() << "clone3 with set_tid is refused here"

// Samples: each program spins a CPU-second.
TEST(RecordRuntime, ReusedPidGetsARecordOfItsOwn) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const auto [first, second] =
      RecordReusedPid({"--", kPidReuse, "1"}, "samples", "first_program_work", "second_program_work");
  SKIP_WITHOUT_SET_TID(std::make_pair(first, second));
  // A CPU-second of each at 999 Hz.
  EXPECT_GT(first, 500u);
  EXPECT_GT(second, 500u);
}

// Off CPU: each program sleeps two seconds; the time each spent asleep is
// in a record of its own (the off-CPU stacks kept for the first are of its
// incarnation). Without that, the second program's time went into the
// first's record (before the fix: one record held both, 0.98 s and 1.00 s).
// The first program's kept stacks leave once the second holds the pid
// (checked once a second, so at least once in the second's two seconds):
// before, they stayed as long as any process held the pid.
TEST(RecordRuntime, ReusedPidGetsOffCpuRecordsOfItsOwn) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  Profile p;
  const auto [first, second] = RecordReusedPid({"--off-cpu", "--", kPidReuse, "2", "sleep"}, "offcpu",
                                               "first_program_sleep", "second_program_sleep", &p);
  SKIP_WITHOUT_SET_TID(std::make_pair(first, second));
  // THRESHOLD: of two seconds asleep each (us).
  EXPECT_GT(first, 1'000'000u);
  EXPECT_GT(second, 1'000'000u);
  const auto it = p.counters.find("offcpu_stacks_of_reused_pids_retired");
  const int64_t retired = it != p.counters.end() ? it->second : 0;
  std::cout << "measured offcpu_stacks_of_reused_pids_retired " << retired << "\n";
  EXPECT_GE(retired, 1) << "the first program's stacks stayed";
}

// `record -- CMD` follows CMD's process tree. When a followed process exits,
// an unrelated process may take its pid at once (a busy machine reuses pids
// within milliseconds): it must not be recorded. Here the test itself (not
// followed) takes the pid of CMD's child right after the child exits, with
// clone3's set_tid, and spins a CPU-second in second_program_work. Before
// the filter dropped exited processes in BPF, the loader dropped them when
// it applied the exit, and the newcomer's first samples were recorded under
// the followed process.
TEST(RecordRuntime, AnUnrelatedProcessReusingAFollowedPidIsNotRecorded) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("reuse.db");
  const std::string pid_file = tmp.path("child.pid");
  // The child writes its pid and exits; CMD lives on for 4 s.
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", "/bin/sh", "-c",
                  "/bin/sh -c 'echo $$ > " + pid_file + ".tmp && mv " + pid_file + ".tmp " + pid_file +
                      "'; sleep 4"});
  pid_t child = 0;
  for (int i = 0; i < 2000 && child == 0; ++i) {
    std::ifstream in(pid_file);
    if (!(in >> child)) child = 0;
    if (child == 0) usleep(5 * 1000);
  }
  ASSERT_GT(child, 0) << rec.stderr_text();
  // Gone (reaped by CMD), then taken at once.
  for (int i = 0; i < 20000 && kill(child, 0) == 0; ++i) usleep(100);
  pid_t tids[1] = {child};
  struct clone_args args {};
  args.exit_signal = SIGCHLD;
  args.set_tid = reinterpret_cast<uint64_t>(tids);
  args.set_tid_size = 1;
  long r = -1;
  for (int i = 0; i < 2000 && r < 0; ++i) {
    r = syscall(SYS_clone3, &args, sizeof(args));
    if (r < 0 && errno != EEXIST) break;
    if (r < 0) usleep(100);  // not reaped yet
  }
  if (r == 0) {
    execl(kPidReuse.c_str(), "pid_reuse", "second", "1", static_cast<char*>(nullptr));
    _exit(127);
  }
  if (r < 0) {
    const int err = errno;
    rec.Wait();
    if (InCi()) FAIL() << "clone3 with set_tid: " << strerror(err);
    GTEST_SKIP() << "clone3 with set_tid is refused here: " << strerror(err);
  }
  int status = 0;
  waitpid(static_cast<pid_t>(r), &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  // The child's own samples (a shell writing a file: a few at most) and
  // any of the newcomer's, whatever they are named.
  uint64_t at_pid = 0, named = 0;
  for (const auto& [stack, n] : Stacks(p, [&](const ThreadRecord& t) { return t.pid == uint32_t(child); }, "samples")) {
    at_pid += n;
    for (const std::string& f : stack) {
      if (f == "second_program_work") named += n;
    }
  }
  std::cout << "pid " << child << ": " << at_pid << " samples (" << named << " in second_program_work) of "
            << p.total_samples() << "\n";
  EXPECT_EQ(named, 0u);
  EXPECT_LT(at_pid, 15u);
}

TEST(RecordRuntime, CtrlCWritesCompleteCaptureAndDetaches) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string db = tmp.path("int.db");
  ArcprofRunPrograms programs;
  Subprocess rec({kArcprof, "record", "-o", db});
  ASSERT_TRUE(rec.WaitForStderr("recording", 20)) << rec.stderr_text();
  const std::set<uint32_t> held = programs.HeldBy(rec.pid());
  EXPECT_FALSE(held.empty()) << "the sampler should be attached";
  const auto loaded = LoadedBpfPrograms();
  EXPECT_TRUE(std::any_of(held.begin(), held.end(), [&](uint32_t id) {
    return loaded.count(id) && loaded.at(id) == "on_sample";
  })) << "on_sample is not among the programs arcprof holds";
  usleep(500 * 1000);
  rec.Signal(SIGINT);
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  EXPECT_GT(p.total_samples(), 0u);
  EXPECT_GT(p.meta.end_monotonic_ns, p.meta.start_monotonic_ns);
  std::string left;
  EXPECT_TRUE(programs.NothingLeft(&left)) << left;
}

TEST(RecordRuntime, SigkillLeavesNothingAttached) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  ArcprofRunPrograms programs;
  Subprocess rec({kArcprof, "record", "-o", tmp.path("kill.db")});
  ASSERT_TRUE(rec.WaitForStderr("recording", 20)) << rec.stderr_text();
  EXPECT_FALSE(programs.HeldBy(rec.pid()).empty());
  rec.Signal(SIGKILL);
  rec.Wait();
  std::string left;
  EXPECT_TRUE(programs.NothingLeft(&left)) << left;
  EXPECT_FALSE(std::filesystem::exists(tmp.path("kill.db")));  // no partial file
}

struct ErrorCase {
  const char* name;
  std::vector<std::string> args;
  const char* expected;  // substring of the one-line error
};

class RecordErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(RecordErrors, OneLineErrorNonZeroExitNothingAttached) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  std::vector<std::string> argv = {kArcprof, "record", "-o", tmp.path("e.db")};
  for (const auto& a : GetParam().args) argv.push_back(a);
  ArcprofRunPrograms programs;
  Subprocess rec(argv);
  const int code = rec.Wait();
  EXPECT_NE(code, 0);
  EXPECT_LT(code, 128) << "crashed: " << rec.stderr_text();
  const std::string& err = rec.stderr_text();
  EXPECT_NE(err.find(GetParam().expected), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(std::filesystem::exists(tmp.path("e.db")));
  std::string left;
  EXPECT_TRUE(programs.NothingLeft(&left)) << left;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RecordErrors,
    ::testing::Values(
        ErrorCase{"MissingPid", {"-p", "999999999"}, "no such process: 999999999"},
        ErrorCase{"BadCommand", {"--", "/nonexistent/prog"}, "cannot start '/nonexistent/prog'"},
        ErrorCase{"UnknownEvent", {"-e", "bogus"}, "unknown event 'bogus'"},
        ErrorCase{"HardwareEventWithoutPmu", {"-e", "cycles", "-d", "1"}, "hardware PMU"},
        ErrorCase{"BadFrequency", {"-F", "0"}, "--freq"},
        ErrorCase{"BadOption", {"--no-such-option"}, "no-such-option"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(RecordRuntime, NotRootGivesOneLineHint) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  // Run arcprof as nobody: drop privileges in a shell-free child.
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 2);
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(99);
    execl(kArcprof.c_str(), kArcprof.c_str(), "record", "-o", "/tmp/arcprof-nobody.db", "-d",
          "1", nullptr);
    _exit(127);
  }
  close(out[1]);
  std::string err;
  char buf[512];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) err.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(err.find("needs root"), std::string::npos) << err;
  EXPECT_NE(err.find("sudo"), std::string::npos) << err;
}

TEST(RecordRuntime, NoBtfGivesOneLineHint) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  setenv("ARCPROF_KERNEL_BTF", "/nonexistent/btf", 1);
  Subprocess rec({kArcprof, "record", "-d", "1", "-o", "/tmp/arcprof-nobtf.db"});
  unsetenv("ARCPROF_KERNEL_BTF");
  EXPECT_EQ(rec.Wait(), 1);
  EXPECT_NE(rec.stderr_text().find("no BTF"), std::string::npos) << rec.stderr_text();
}

}  // namespace
}  // namespace arcprof::testing
