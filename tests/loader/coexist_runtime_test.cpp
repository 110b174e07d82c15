// arcprof shares the machine with other profilers: a `perf record -a` running
// at the same time must stay readable by perf. (Asking the kernel for build-ids
// in MMAP2 records broke exactly that: the records other listeners received
// claimed build-ids they did not hold, and perf 6.1 aborted reading them.)
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sys/syscall.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kGroundTruth = std::string(ARCPROF_TEST_PROGRAMS) + "/ground_truth";
const char* const kPerf = "/usr/bin/perf";

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
