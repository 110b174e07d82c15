// arcprof shares the machine with other profilers: a `perf record -a` running
// at the same time must stay readable by perf. (Asking the kernel for build-ids
// in MMAP2 records broke exactly that: the records other listeners received
// claimed build-ids they did not hold, and perf 6.1 aborted reading them.)
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sys/syscall.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "store/window_store.h"
#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kGroundTruth = std::string(ARCPROF_TEST_PROGRAMS) + "/ground_truth";
const std::string kOffCpuMix = std::string(ARCPROF_TEST_PROGRAMS) + "/offcpu_mix";
const char* const kPerf = "/usr/bin/perf";

// f_heavy's share of f_heavy + f_light in the samples of process `pid`, and
// how many samples that is.
std::pair<double, uint64_t> HeavyShare(const Profile& p, uint32_t pid) {
  const auto leaves = LeafCounts(p, [pid](const ThreadRecord& t) { return t.pid == pid; });
  auto get = [&](const char* s) { return leaves.count(s) ? leaves.at(s) : uint64_t{0}; };
  const uint64_t heavy = get("f_heavy"), light = get("f_light");
  return {heavy + light ? static_cast<double>(heavy) / static_cast<double>(heavy + light) : -1.0, heavy + light};
}

// A binomial share of n samples: 4 standard deviations, at least 3 points.
double Tolerance(double share, uint64_t n) {
  return std::max(0.03, 4 * std::sqrt(share * (1 - share) / static_cast<double>(std::max<uint64_t>(n, 1))));
}

double CpuMs(const std::string& ground_truth_stderr) {
  const size_t at = ground_truth_stderr.find("ground_truth cpu_ms=");
  return at == std::string::npos ? -1 : std::stod(ground_truth_stderr.substr(at + 20));
}

std::set<uint32_t> ProgramsHeldBy(pid_t pid) {
  std::set<uint32_t> out;
  for (const auto& [id, holders] : ScanHeldBpf().programs) {
    if (holders.count(pid)) out.insert(id);
  }
  return out;
}

TEST(Coexist, ConcurrentPerfRecordStaysReadable) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  if (access(kPerf, X_OK) != 0) {
    if (InCi()) FAIL() << "perf is not installed (CI=true: must not skip)";
    GTEST_SKIP() << "perf is not installed (Debian package linux-perf)";
  }
  TempDir tmp;
  const std::string perf_data = tmp.path("perf.data");
  Subprocess perf({kPerf, "record", "-q", "-F", "99", "-g", "-a", "-o", perf_data, "--",
                   "/bin/sleep", "6"});
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const std::string db = tmp.path("x.db");
  Subprocess rec({kArcprof, "record", "-q", "-d", "3", "-o", db});
  // New processes while both listen: each exec and library mapping is an
  // MMAP2 record delivered to perf and to arcprof alike.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (int i = 0; i < 5; ++i) {
    Subprocess child({kGroundTruth, "0.1"});
    EXPECT_EQ(child.Wait(), 0) << child.stderr_text();
  }
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  ASSERT_EQ(perf.Wait(), 0) << perf.stderr_text();

  // perf report must read its own file without aborting (it asserted and
  // smashed its stack on records claiming absent build-ids).
  Subprocess report({kPerf, "report", "-i", perf_data, "--stdio", "--no-children", "--sort",
                     "comm,dso"},
                    /*capture_stderr=*/true);
  EXPECT_EQ(report.Wait(), 0) << report.stderr_text();
  auto [script_code, script] = RunCapture({kPerf, "script", "-i", perf_data, "--show-mmap-events"});
  EXPECT_EQ(script_code, 0);
  EXPECT_NE(script.find("ground_truth"), std::string::npos)
      << "perf saw none of the programs started while both recorded";

  // arcprof keeps build-ids, now read from the mapped files themselves.
  Profile p = LoadCapture(db);
  auto [code, notes] = RunCapture({"/usr/bin/readelf", "-n", kGroundTruth});
  const size_t id_at = notes.find("Build ID: ");
  ASSERT_NE(id_at, std::string::npos);
  const std::string build_id = notes.substr(id_at + 10, 40);
  bool found = false;
  for (const auto& [module, id] : p.build_ids) found = found || id == build_id;
  EXPECT_TRUE(found) << "build-id " << build_id << " of ground_truth not in the capture";
}

// bpftrace beside arcprof: its own profile probe at 99 Hz counts the same
// program arcprof records; both get their samples, bpftrace exits cleanly,
// and arcprof leaves bpftrace's programs alone.
TEST(Coexist, BpftraceBesideRecord) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ARCPROF_REQUIRE_TOOL("/usr/bin/bpftrace", "bpftrace");
  TempDir tmp;
  ArcprofRunPrograms programs;
  const std::string out = tmp.path("bpftrace.out");
  Subprocess bpftrace({"/usr/bin/bpftrace", "-o", out, "-e",
                       "profile:hz:99 /comm == \"ground_truth\"/ { @n = count(); } interval:s:7 { exit(); }"});
  auto read_out = [&out] {
    std::ifstream in(out);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  // bpftrace says "Attaching N probes..." once they are in.
  for (int i = 0; i < 300 && read_out().find("Attaching") == std::string::npos; ++i) usleep(100 * 1000);
  ASSERT_NE(read_out().find("Attaching"), std::string::npos) << bpftrace.stderr_text();
  programs.Beside(bpftrace.pid());  // its perf events are its own
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string db = tmp.path("x.db");
  Subprocess rec({kArcprof, "record", "-q", "-o", db, "--", kGroundTruth, "3"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  const double cpu_ms = CpuMs(rec.stderr_text());
  ASSERT_GT(cpu_ms, 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  ASSERT_FALSE(p.threads.empty());
  const auto [share, n] = HeavyShare(p, p.threads[0].pid);
  EXPECT_NEAR(share, 0.75, Tolerance(0.75, n)) << n << " samples";
  EXPECT_NEAR(static_cast<double>(p.total_samples()), cpu_ms * 0.999, cpu_ms * 0.999 * 0.10);
  std::string left;
  EXPECT_TRUE(programs.NothingLeft(&left)) << left;

  // bpftrace prints its map at exit: "@n: COUNT", one per 1/99 s of the
  // program's CPU time.
  EXPECT_EQ(bpftrace.Wait(), 0) << bpftrace.stderr_text();
  const std::string text = read_out();
  const size_t at = text.find("@n: ");
  ASSERT_NE(at, std::string::npos) << text;
  const double counted = std::stod(text.substr(at + 4));
  EXPECT_NEAR(counted, cpu_ms * 0.099, cpu_ms * 0.099 * 0.2 + 5) << text;
}

// A fleet runs `arcprof continuous` on every machine; an engineer runs
// `arcprof record` beside it. Each has its own BPF programs, maps, ring buffer
// and side band: both get every sample of what they watch, neither detaches
// or drops the other's. The daemon is a real one, started detached from this
// test like a system service, and of another build's path (a copy of the
// binary), so the leak check must tell its programs apart on its own.
TEST(Coexist, DaemonAndRecordingsEachGetTheirOwnSamples) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ARCPROF_REQUIRE_TOOL("/usr/sbin/bpftool", "bpftool");
  TempDir tmp;
  ArcprofRunPrograms programs;  // before the daemon: its programs are new, yet not this run's
  const std::string daemon_bin = tmp.path("arcprof-daemon");
  std::filesystem::copy_file(kArcprof, daemon_bin);
  chmod(daemon_bin.c_str(), 0755);
  const std::string store = tmp.path("store");
  DetachedArcprof daemon(tmp.dir(), {daemon_bin, "continuous", "--store", store, "--window", "2s", "-F", "499",
                                     "--no-java"});
  ASSERT_TRUE(daemon.WaitForLog([](const std::string& log) { return log.find("continuous capture of") != std::string::npos; },
                                30))
      << daemon.log();
  const std::set<uint32_t> daemon_programs = ProgramsHeldBy(daemon.pid());
  ASSERT_FALSE(daemon_programs.empty()) << daemon.log();

  // A program only the daemon watches, at 1:3, running through all the recordings.
  Subprocess background({kGroundTruth, "12", "1:3"});

  // record -- CMD, with per-thread time: the command's 3:1, its CPU time
  // against the kernel's account, nothing of the daemon's background program.
  uint32_t command_pid = 0;
  double command_cpu_ms = 0;
  {
    const std::string db = tmp.path("cmd.db");
    Subprocess rec({kArcprof, "record", "-q", "--ptt", "-o", db, "--", kGroundTruth, "3"});
    ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
    Profile p = LoadCapture(db);
    ASSERT_FALSE(p.threads.empty());
    command_pid = p.threads[0].pid;
    for (const ThreadRecord& t : p.threads) EXPECT_EQ(t.pid, command_pid) << t.comm;
    const auto [share, n] = HeavyShare(p, command_pid);
    EXPECT_NEAR(share, 0.75, Tolerance(0.75, n)) << n << " samples";
    const double cpu_ms = CpuMs(rec.stderr_text());
    ASSERT_GT(cpu_ms, 0) << rec.stderr_text();
    command_cpu_ms = cpu_ms;
    EXPECT_NEAR(static_cast<double>(p.total_samples()), cpu_ms * 0.999, cpu_ms * 0.999 * 0.10);
    ASSERT_TRUE(p.ptt.recorded);
    uint64_t ptt_ns = 0;
    for (const PttThread& t : p.ptt.threads) {
      if (t.pid == command_pid) ptt_ns += t.cpu_ns + t.interrupt_ns();
    }
    EXPECT_NEAR(static_cast<double>(ptt_ns) / 1e6, cpu_ms, cpu_ms * 0.10);
    std::string left;
    EXPECT_TRUE(programs.NothingLeft(&left)) << "with the daemon running:\n" << left;
  }
  // record -p of a running program.
  {
    Subprocess target({kGroundTruth, "4"});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const std::string db = tmp.path("pid.db");
    Subprocess rec({kArcprof, "record", "-q", "-o", db, "-d", "2", "-p", std::to_string(target.pid())});
    ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
    Profile p = LoadCapture(db);
    for (const ThreadRecord& t : p.threads) EXPECT_EQ(t.pid, static_cast<uint32_t>(target.pid())) << t.comm;
    const auto [share, n] = HeavyShare(p, static_cast<uint32_t>(target.pid()));
    EXPECT_GT(n, 200u);  // 2 s of a busy program; far fewer on a loaded machine
    EXPECT_NEAR(share, 0.75, Tolerance(0.75, n)) << n << " samples";
    EXPECT_EQ(target.Wait(), 0);
  }
  // record --off-cpu: its scheduler program runs beside the daemon's sampler.
  {
    const std::string db = tmp.path("offcpu.db");
    Subprocess rec({kArcprof, "record", "-q", "--off-cpu", "-o", db, "--", kOffCpuMix, "1"});
    ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
    Profile p = LoadCapture(db);
    // The main thread (its child, which writes the pipe, sleeps in pipe_phase too).
    uint32_t main_tid = 0;
    for (const ThreadRecord& t : p.threads) {
      for (const auto& node : t.tree.nodes()) {
        if (node.frame != CallTree::kNoFrame && p.frames.at(node.frame).symbol == "burn_phase") main_tid = t.tid;
      }
    }
    ASSERT_NE(main_tid, 0u) << "no thread ran burn_phase";
    const auto offcpu = Stacks(p, [main_tid](const ThreadRecord& t) { return t.tid == main_tid; }, "offcpu");
    uint64_t sleep_us = 0, pipe_us = 0;
    for (const auto& [stack, us] : offcpu) {
      if (std::find(stack.begin(), stack.end(), "sleep_phase") != stack.end()) sleep_us += us;
      if (std::find(stack.begin(), stack.end(), "pipe_phase") != stack.end()) pipe_us += us;
    }
    EXPECT_NEAR(static_cast<double>(sleep_us), 1e6, 0.15e6);
    EXPECT_NEAR(static_cast<double>(pipe_us), 1e6, 0.15e6);
  }
  std::string left;
  EXPECT_TRUE(programs.NothingLeft(&left)) << "with the daemon running:\n" << left;

  // The daemon kept its programs through all of it, and saw both programs
  // with their own shares.
  EXPECT_TRUE(daemon.Running()) << daemon.log();
  EXPECT_EQ(ProgramsHeldBy(daemon.pid()), daemon_programs);
  EXPECT_EQ(background.Wait(), 0);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_TRUE(daemon.Stop()) << daemon.log();
  EXPECT_TRUE(programs.NothingLeft(&left)) << "the daemon left programs behind:\n" << left;
  auto opened = WindowStore::OpenForReading(store);
  ASSERT_TRUE(opened) << daemon.log();
  auto all = opened->ReadRange(0, UINT64_MAX, nullptr);
  ASSERT_TRUE(all) << all.error().message;
  const auto [bg_share, bg_n] = HeavyShare(*all, static_cast<uint32_t>(background.pid()));
  EXPECT_GT(bg_n, 100u);
  EXPECT_NEAR(bg_share, 0.25, Tolerance(0.25, bg_n)) << bg_n << " samples";
  const auto [cmd_share, cmd_n] = HeavyShare(*all, command_pid);
  EXPECT_NEAR(cmd_share, 0.75, Tolerance(0.75, cmd_n)) << cmd_n << " samples";
  // The daemon watched the whole command: one sample per 1/499 s of its CPU
  // time, as the recording had one per 1/999 s.
  uint64_t cmd_total = 0;
  for (const auto& [stack, n] : Stacks(*all, [&](const ThreadRecord& t) { return t.pid == command_pid; })) cmd_total += n;
  EXPECT_NEAR(static_cast<double>(cmd_total), command_cpu_ms * 0.499, command_cpu_ms * 0.499 * 0.15);
}

// The "nothing of this run stays loaded" check (ArcprofRunPrograms) tells this
// run's programs from another arcprof's; it must still catch a real leak: a
// program of the run held by a process the test started (a command that
// inherited a descriptor) and one pinned in bpffs (held by no process).
TEST(Coexist, LeakCheckCatchesProgramsLeftBehind) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ARCPROF_REQUIRE_TOOL("/usr/sbin/bpftool", "bpftool");
  TempDir tmp;
  ArcprofRunPrograms programs;
  Subprocess rec({kArcprof, "record", "--no-java", "--no-ptt", "-o", tmp.path("x.db")});
  ASSERT_TRUE(rec.WaitForStderr("recording", 20)) << rec.stderr_text();
  const std::set<uint32_t> held = programs.HeldBy(rec.pid());
  ASSERT_GE(held.size(), 1u);
  const uint32_t kept = *held.begin();
  const uint32_t pinned = *held.rbegin();

  // A child of this test takes a descriptor of one program, as a command
  // that inherited it would, and outlives arcprof.
  int ready[2];
  ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
  const pid_t holder = fork();
  if (holder == 0) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.prog_id = kept;
    const long fd = syscall(SYS_bpf, BPF_PROG_GET_FD_BY_ID, &attr, sizeof(attr));
    const char ok = fd >= 0 ? 'y' : 'n';
    if (write(ready[1], &ok, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  close(ready[0]);
  ASSERT_EQ(ok, 'y') << "cannot take a descriptor of program " << kept;
  // Another one pinned, as a pinning bug would leave it.
  const std::string pin = "/sys/fs/bpf/arcprof-leak-test-" + std::to_string(getpid());
  auto [pin_code, pin_out] = RunCapture({"/usr/sbin/bpftool", "prog", "pin", "id", std::to_string(pinned), pin});
  ASSERT_EQ(pin_code, 0) << "bpftool prog pin failed (bpffs not mounted at /sys/fs/bpf?)";

  rec.Signal(SIGINT);
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  std::string left;
  EXPECT_FALSE(programs.NothingLeft(&left)) << "a program held by the test's child went unnoticed";
  EXPECT_NE(left.find("program " + std::to_string(kept) + " "), std::string::npos) << left;
  EXPECT_NE(left.find(std::to_string(holder) + "("), std::string::npos) << left;
  EXPECT_NE(left.find("program " + std::to_string(pinned) + " "), std::string::npos) << left;

  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  EXPECT_FALSE(programs.NothingLeft(&left)) << "a pinned program went unnoticed";
  EXPECT_NE(left.find("program " + std::to_string(pinned) + " "), std::string::npos) << left;
  EXPECT_NE(left.find("no process"), std::string::npos) << left;

  unlink(pin.c_str());
  EXPECT_TRUE(programs.NothingLeft(&left)) << left;
}

}  // namespace
}  // namespace arcprof::testing
