// Runtime tests of `arcprof record` against bad input and hostile situations:
// absurd options, outputs that cannot be written, signals to arcprof and to
// the profiled command, sample rates above what the machine can process.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool PidAlive(pid_t pid) { return pid > 0 && kill(pid, 0) == 0; }

pid_t ReadPid(const std::string& path, double timeout_s) {
  auto start = std::chrono::steady_clock::now();
  while (SecondsSince(start) < timeout_s) {
    std::ifstream in(path);
    pid_t pid = 0;
    if (in >> pid && pid > 0) return pid;
    usleep(50 * 1000);
  }
  return 0;
}

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// ------------------------------------------------------------ absurd options

struct BadOption {
  const char* name;
  std::vector<std::string> args;
  const char* expected;
};

class RecordRejects : public ::testing::TestWithParam<BadOption> {};

TEST_P(RecordRejects, WithOneClearLineBeforeSampling) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  std::vector<std::string> argv = {kArcprof, "record", "-o", tmp.path("x.db")};
  for (const auto& a : GetParam().args) argv.push_back(a);
  const auto start = std::chrono::steady_clock::now();
  Subprocess rec(argv);
  const int code = rec.Wait();
  const std::string& err = rec.stderr_text();
  EXPECT_EQ(code, 1) << err;
  EXPECT_LT(SecondsSince(start), 20.0);
  EXPECT_NE(err.find(GetParam().expected), std::string::npos) << err;
  EXPECT_EQ(Lines(err), 1u) << err;
  EXPECT_LT(err.size(), 300u) << err;  // no 309-digit maximum
  EXPECT_EQ(err.find("recording"), std::string::npos) << "sampling started: " << err;
  EXPECT_EQ(err.find("root"), std::string::npos) << "misleading: " << err;
  EXPECT_FALSE(std::filesystem::exists(tmp.path("x.db")));
}

INSTANTIATE_TEST_SUITE_P(
    Options, RecordRejects,
    ::testing::Values(
        BadOption{"DurationNan", {"-d", "nan"}, "seconds from 0"},
        BadOption{"DurationInf", {"-d", "inf"}, "seconds from 0"},
        BadOption{"DurationOverflow", {"-d", "18446744073"}, "seconds from 0"},
        BadOption{"DurationNegative", {"-d", "-1"}, "seconds from 0"},
        BadOption{"BufferTooLarge", {"--buffer-mb", "4096"}, "--buffer-mb"},
        BadOption{"PidZero", {"-p", "0"}, "pid 0 is the kernel's idle task"},
        BadOption{"AllCpusWithCommand", {"-a", "--", "true"}, "all-cpus"},
        BadOption{"CountWithFreq", {"-c", "1000", "-F", "99"}, "--count"},
        BadOption{"CallGraphSize", {"--call-graph", "dwarf,0"}, "stack size"}),
    [](const auto& info) { return std::string(info.param.name); });

// ------------------------------------------------------ outputs, before sampling

TEST(RecordOutput, BadOutputsAreRefusedBeforeSamplingAndNothingIsReplaced) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  // A private device node (the null device's numbers) stands in for /dev/null.
  const std::string device = tmp.path("null");
  ASSERT_EQ(mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << strerror(errno);
  const std::string fifo = tmp.path("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_directory(tmp.path("dir"));
  struct Case {
    std::string output, expected;
  };
  for (const Case& c : {Case{device, "character device"}, Case{fifo, "FIFO"},
                        Case{tmp.path("dir"), "directory"},
                        Case{tmp.path("missing/x.db"), "No such file or directory"}}) {
    Subprocess rec({kArcprof, "record", "-d", "30", "-o", c.output});
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(rec.Wait(), 1) << c.output;
    EXPECT_LT(SecondsSince(start), 20.0) << c.output;  // not after a 30 s recording
    EXPECT_NE(rec.stderr_text().find(c.expected), std::string::npos) << rec.stderr_text();
    EXPECT_EQ(rec.stderr_text().find("recording"), std::string::npos) << rec.stderr_text();
  }
  struct stat st {};
  ASSERT_EQ(lstat(device.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced";
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  // Nothing but what the test made: no temporary files left behind.
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.dir())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 3u);
}

// A disk that fills up while recording: the capture goes elsewhere, and the
// message says where.
TEST(RecordOutput, FullDiskKeepsTheRecordingAndSaysWhere) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string mnt = tmp.path("small");
  std::filesystem::create_directory(mnt);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=256k") != 0) {
    const std::string why = std::string("cannot mount a small tmpfs: ") + strerror(errno);
    if (InCi()) FAIL() << why;
    GTEST_SKIP() << why;
  }
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};
  // The command fills the disk once sampling runs (the output was checked before).
  Subprocess rec({kArcprof, "record", "--no-ptt", "-o", mnt + "/x.db", "--", "/bin/sh", "-c",
                  "dd if=/dev/zero of=" + mnt + "/fill bs=4k 2>/dev/null; i=0; "
                  "while [ $i -lt 200000 ]; do i=$((i+1)); done"});
  const int code = rec.Wait();
  const std::string& err = rec.stderr_text();
  EXPECT_NE(code, 0) << err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex("the recording is kept in (\\S+)"))) << err;
  const std::string kept = m[1];
  EXPECT_NE(kept.find("arcprof-rescued-"), std::string::npos) << kept;
  Profile p = LoadCapture(kept);
  EXPECT_GT(p.total_samples(), 0u);
  struct stat st {};
  ASSERT_EQ(stat(kept.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::filesystem::remove(kept);
}

// --------------------------------------------------------------------- signals

TEST(RecordSignals, SigtermIsForwardedToTheCommand) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string marker = tmp.path("marker"), pidfile = tmp.path("pid");
  Subprocess rec({kArcprof, "record", "-o", tmp.path("x.db"), "--", "/bin/sh", "-c",
                  "trap 'echo term > " + marker + "; exit 0' TERM; echo $$ > " + pidfile +
                      "; while :; do :; done"});
  ASSERT_TRUE(rec.WaitForStderr("recording", 20)) << rec.stderr_text();
  const pid_t child = ReadPid(pidfile, 10);
  ASSERT_GT(child, 0);
  usleep(300 * 1000);
  rec.Signal(SIGTERM);
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  std::ifstream in(marker);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "term") << "the command did not get the SIGTERM";
  EXPECT_FALSE(PidAlive(child));
  EXPECT_GT(LoadCapture(tmp.path("x.db")).total_samples(), 0u);
}

TEST(RecordSignals, ACommandIgnoringSigtermIsKilledAfterAMoment) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string pidfile = tmp.path("pid");
  Subprocess rec({kArcprof, "record", "-o", tmp.path("x.db"), "--", "/bin/sh", "-c",
                  "trap '' TERM INT; echo $$ > " + pidfile + "; exec sleep 600"});
  ASSERT_TRUE(rec.WaitForStderr("recording", 20)) << rec.stderr_text();
  const pid_t child = ReadPid(pidfile, 10);
  ASSERT_GT(child, 0);
  const auto start = std::chrono::steady_clock::now();
  rec.Signal(SIGTERM);
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_LT(SecondsSince(start), 30.0);
  EXPECT_FALSE(PidAlive(child)) << "the command outlived arcprof";
  EXPECT_TRUE(std::filesystem::exists(tmp.path("x.db")));
}

// A command that dies of a signal of its own (a crash) is said so, with the
// signal; the capture is still written and arcprof still exits 0.
TEST(RecordSignals, ACommandKilledByASignalIsReported) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  Subprocess rec({kArcprof, "record", "-o", tmp.path("x.db"), "--", "/bin/sh", "-c",
                  "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; kill -SEGV $$"});
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_NE(rec.stderr_text().find("the command was killed by signal 11 (Segmentation fault)"),
            std::string::npos)
      << rec.stderr_text();
  EXPECT_TRUE(std::filesystem::exists(tmp.path("x.db")));
}

// A signal that arcprof passed on (or its kill at the end) is not reported as
// the command's own death.
TEST(RecordSignals, ACommandStoppedByArcprofIsNotReportedAsKilled) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string pidfile = tmp.path("pid");
  Subprocess rec({kArcprof, "record", "-o", tmp.path("x.db"), "--", "/bin/sh", "-c",
                  "echo $$ > " + pidfile + "; exec sleep 600"});
  ASSERT_TRUE(rec.WaitForStderr("recording", 20)) << rec.stderr_text();
  ASSERT_GT(ReadPid(pidfile, 10), 0);
  rec.Signal(SIGTERM);
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_EQ(rec.stderr_text().find("killed by signal"), std::string::npos) << rec.stderr_text();
}

TEST(RecordSignals, SigkillOfArcprofTakesTheCommandAlong) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string pidfile = tmp.path("pid");
  ArcprofRunPrograms programs;
  Subprocess rec({kArcprof, "record", "-o", tmp.path("x.db"), "--", "/bin/sh", "-c",
                  "echo $$ > " + pidfile + "; exec sleep 600"});
  ASSERT_TRUE(rec.WaitForStderr("recording", 20)) << rec.stderr_text();
  const pid_t child = ReadPid(pidfile, 10);
  ASSERT_GT(child, 0);
  // The command inherits none of arcprof's BPF or perf event descriptors
  // (they would keep the programs loaded after arcprof).
  EXPECT_FALSE(programs.HeldBy(rec.pid()).empty());
  const HeldBpf held = ScanHeldBpf();
  for (const auto& [id, holders] : held.programs) EXPECT_EQ(holders.count(child), 0u) << "program " << id;
  EXPECT_EQ(held.perf_events.count(child), 0u);
  rec.Signal(SIGKILL);
  rec.Wait();
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    // The child is re-parented to init, which reaps it.
    gone = !PidAlive(child);
    if (!gone) usleep(100 * 1000);
  }
  EXPECT_TRUE(gone) << "the command outlived arcprof";
  std::string left;
  EXPECT_TRUE(programs.NothingLeft(&left)) << left;
}

// Alive and not a zombie (a zombie has exited; kill(pid, 0) still finds it).
bool Running(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// The cgroup2 mount point, from /proc/self/mountinfo ("" when none).
std::string Cgroup2Mount() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, device, root, point;
    fields >> id >> parent >> device >> root >> point;
    return point;
  }
  return "";
}

// The whole tree the command started goes when arcprof goes, whatever stops
// arcprof (issue 23: `sleep 40 &` ran on under init after every signal): a
// background grandchild, and a daemon that left the session with setsid. With
// a cgroup (this machine: cgroup v2 under /sys/fs/cgroup/unified) for every
// signal, SIGKILL included; without one (cgroup2 unmounted in a mount
// namespace of arcprof's own) for the signals arcprof survives.
struct TreeCase {
  int sig;
  bool cgroup;
};

class RecordTree : public ::testing::TestWithParam<TreeCase> {};

TEST_P(RecordTree, TheCommandsWholeTreeGoesWithArcprof) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  const auto [sig, cgroup] = GetParam();
  const std::string mount = Cgroup2Mount();
  if (mount.empty()) {
    if (InCi()) FAIL() << "no cgroup2 mounted (CI=true: must not skip)";
    GTEST_SKIP() << "no cgroup2 mounted";
  }
  TempDir tmp;
  const std::string child_pid = tmp.path("child"), bg_pid = tmp.path("bg"), daemon_pid = tmp.path("daemon");
  // The tree does not hold arcprof's stderr: a survivor would keep Wait() from ever seeing its end.
  std::vector<std::string> argv = {kArcprof, "record", "-o", tmp.path("x.db"), "--", "/bin/sh", "-c",
                                   "exec 2>/dev/null; sleep 600 & echo $! > " + bg_pid +
                                       "; setsid /bin/sh -c 'echo $$ > " + daemon_pid + "; exec sleep 600' & echo $$ > " +
                                       child_pid + "; exec sleep 600"};
  if (!cgroup) {
    // arcprof in a mount namespace without cgroup2: no cgroup can be made.
    const std::string script = "umount -l " + mount + " && exec \"$0\" \"$@\"";
    argv.insert(argv.begin(), {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script});
  }
  Subprocess rec(argv);
  ASSERT_TRUE(rec.WaitForStderr("recording", 20)) << rec.stderr_text();
  const pid_t child = ReadPid(child_pid, 10), bg = ReadPid(bg_pid, 10), daemon = ReadPid(daemon_pid, 10);
  ASSERT_GT(child, 0);
  ASSERT_GT(bg, 0);
  ASSERT_GT(daemon, 0);
  ASSERT_TRUE(Running(bg) && Running(daemon));
  {
    // The daemon really left arcprof's session and process group.
    std::ifstream in("/proc/" + std::to_string(daemon) + "/stat");
    std::string stat;
    std::getline(in, stat);
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string state;
    pid_t ppid = 0, pgrp = 0, session = 0;
    fields >> state >> ppid >> pgrp >> session;
    EXPECT_EQ(session, daemon) << stat;
    // In the command's cgroup, or (without one) not.
    std::ifstream cg("/proc/" + std::to_string(daemon) + "/cgroup");
    const std::string cgroups((std::istreambuf_iterator<char>(cg)), {});
    EXPECT_EQ(cgroups.find("/arcprof-") != std::string::npos, cgroup) << cgroups;
  }
  rec.Signal(sig);
  rec.Wait();
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    gone = !Running(child) && !Running(bg) && !Running(daemon);
    if (!gone) usleep(100 * 1000);
  }
  EXPECT_FALSE(Running(child)) << "the command outlived arcprof";
  EXPECT_FALSE(Running(bg)) << "the command's background child outlived arcprof";
  EXPECT_FALSE(Running(daemon)) << "the command's setsid daemon outlived arcprof";
  for (pid_t pid : {child, bg, daemon}) {
    if (Running(pid)) kill(pid, SIGKILL);
  }
  // The command's cgroup (made under arcprof's, which is this test's) is gone too.
  std::string own;
  {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("0::", 0) == 0) own = line.substr(3);
    }
  }
  const std::string made = mount + (own == "/" ? "" : own) + "/arcprof-" + std::to_string(rec.pid()) + "-0";
  // After SIGKILL the guardian removes it once the killed tree has exited:
  // give it the same 5 s as the processes.
  struct stat st {};
  bool left = stat(made.c_str(), &st) == 0;
  for (int i = 0; i < 50 && left; ++i) {
    usleep(100 * 1000);
    left = stat(made.c_str(), &st) == 0;
  }
  EXPECT_FALSE(left) << made << " is left";
}

INSTANTIATE_TEST_SUITE_P(StopSignals, RecordTree,
                         ::testing::Values(TreeCase{SIGTERM, true}, TreeCase{SIGINT, true}, TreeCase{SIGKILL, true},
                                           TreeCase{SIGTERM, false}, TreeCase{SIGINT, false}),
                         [](const ::testing::TestParamInfo<TreeCase>& info) {
                           return std::string(info.param.sig == SIGTERM  ? "Sigterm"
                                              : info.param.sig == SIGINT ? "Sigint"
                                                                         : "Sigkill") +
                                  (info.param.cgroup ? "" : "WithoutCgroup");
                         });

TEST(RecordSignals, Sigusr1StopsAndWritesTheCapture) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  ArcprofRunPrograms programs;
  Subprocess rec({kArcprof, "record", "--no-ptt", "-o", tmp.path("x.db")});
  ASSERT_TRUE(rec.WaitForStderr("recording", 20)) << rec.stderr_text();
  usleep(500 * 1000);
  rec.Signal(SIGUSR1);
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_GT(LoadCapture(tmp.path("x.db")).total_samples(), 0u);
  std::string left;
  EXPECT_TRUE(programs.NothingLeft(&left)) << left;
}

// -F 100000 swamps this 2-CPU machine with sampling interrupts (it recorded
// for 11 min 50 s and ignored SIGTERM): the recording still honours SIGTERM,
// ends, writes the capture and detaches. The bound is for a hang, not speed:
// on this VM, busy with other builds, it took up to 95 s.
TEST(RecordSignals, HighSampleRateHonoursSigterm) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  ArcprofRunPrograms programs;
  Subprocess rec({kArcprof, "record", "--no-ptt", "--no-java", "-F", "100000", "-d", "600", "-o",
                  tmp.path("t.db")});
  ASSERT_TRUE(rec.WaitForStderr("recording", 60)) << rec.stderr_text();
  usleep(1000 * 1000);
  const auto start = std::chrono::steady_clock::now();
  rec.Signal(SIGTERM);
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_LT(SecondsSince(start), 300.0) << rec.stderr_text();
  EXPECT_TRUE(std::filesystem::exists(tmp.path("t.db")));
  std::string left;
  EXPECT_TRUE(programs.NothingLeft(&left)) << left;
}

// ------------------------------------------------------------------ pids

TEST(RecordPids, AKernelThreadIsNamedAndAnEmptyRecordingSaysSo) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  // pid 2 is kthreadd, which rarely runs.
  Subprocess rec({kArcprof, "record", "-p", "2", "-d", "1", "-o", tmp.path("x.db")});
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  EXPECT_NE(rec.stderr_text().find("kernel thread"), std::string::npos) << rec.stderr_text();
  if (LoadCapture(tmp.path("x.db")).total_samples() == 0) {
    EXPECT_NE(rec.stderr_text().find("no samples"), std::string::npos) << rec.stderr_text();
  }
}

// ------------------------------------------------------------------ perf habits

TEST(RecordPerfHabits, AllCpusCallGraphAndCountAreAccepted) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  // -c 2000000 on cpu-clock: one sample every 2 ms, 500 per second per CPU.
  Subprocess rec({kArcprof, "record", "-a", "-g", "--call-graph", "dwarf,16384", "-c", "2000000",
                  "--no-ptt", "-d", "1", "-o", tmp.path("x.db")});
  EXPECT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(tmp.path("x.db"));
  EXPECT_EQ(p.meta.frequency_hz, 500u);
  EXPECT_EQ(p.meta.call_graph, "dwarf");
  EXPECT_GT(p.total_samples(), 0u);
}

}  // namespace
}  // namespace arcprof::testing
