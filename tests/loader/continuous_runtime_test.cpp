// `arcprof continuous` as root against this machine: windows on schedule that
// sum to the range, SIGKILL then restart, a full disk, stores it must refuse,
// retention by size, and a corrupt window in reports.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "store/capture_store.h"
#include "store/window_store.h"
#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

constexpr const char* kArcprof = ARCPROF_BIN;
const std::string kPidReuse = std::string(ARCPROF_TEST_PROGRAMS) + "/pid_reuse";
// AReusedPidsProcessesStayApartAcrossWindows: the fewest samples of each
// program's second of CPU at 199 Hz (see there).
constexpr uint64_t kReusedPidMinSamples = 100;
// The same in the one window that holds most of it.
constexpr uint64_t kReusedPidMinWindowSamples = 20;

std::vector<StoredWindow> Windows(const std::string& dir) {
  auto store = WindowStore::OpenForReading(dir);
  if (!store) return {};
  return store->List();
}

// Waits until the store holds at least `n` windows.
bool WaitForWindows(const std::string& dir, size_t n, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (Windows(dir).size() >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

std::vector<std::string> Continuous(const std::string& store, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {kArcprof, "continuous", "--store", store, "--window", "1s", "--no-java"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

TEST(ContinuousRuntime, WindowsOnScheduleSumToTheRangeAndCorruptOnesAreSkipped) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string store = tmp.path("store");
  Subprocess daemon(Continuous(store));
  ASSERT_TRUE(daemon.WaitForStderr("continuous capture of system at 49 Hz", 20)) << daemon.stderr_text();
  ASSERT_TRUE(WaitForWindows(store, 4, 20));
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const uint64_t sigterm_unix_ns = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + ts.tv_nsec;
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();
  EXPECT_NE(daemon.stderr_text().find("stopped by"), std::string::npos) << daemon.stderr_text();

  const std::vector<StoredWindow> windows = Windows(store);
  ASSERT_GE(windows.size(), 4u);
  uint64_t sum = 0, ptt_ns = 0, ptt_span = 0;
  std::map<uint32_t, uint64_t> cpu_end;  // where each CPU's intervals stopped
  constexpr uint64_t kSecond = 1'000'000'000ull;
  constexpr uint64_t kSlack = 50'000'000ull;  // clock conversions, not scheduling
  size_t one_second = 0;
  for (size_t i = 0; i < windows.size(); ++i) {
    const StoredWindow& w = windows[i];
    const uint64_t len = w.end_unix_ns - w.start_unix_ns;
    // Contiguous; every window but the last ends exactly on a whole second,
    // even when closed late. None of this depends on how loaded the machine
    // is: the ends are the boundaries, not the times the closes ran.
    if (i + 1 < windows.size()) {
      EXPECT_EQ(w.end_unix_ns, windows[i + 1].start_unix_ns) << w.id;
      const uint64_t off = w.end_unix_ns % kSecond;
      EXPECT_LT(std::min<uint64_t>(off, kSecond - off), kSlack) << w.id;
    }
    if (i == 0) {
      // The first starts with the session, before the programs load and
      // /proc is read (0.1-0.4 s under 20+ load here), and runs to the first
      // boundary at least 0.1 s after that: up to 1.1 s plus the startup,
      // allowed up to a second.
      EXPECT_LE(len, 2 * kSecond + kSecond / 10 + kSlack) << w.id;
    } else if (i + 1 < windows.size()) {
      // Whole seconds: one, or more when a close ran more than a window late
      // (the next boundary then comes from the time of that close).
      const uint64_t whole = (len + kSecond / 2) / kSecond;
      EXPECT_GE(whole, 1u) << w.id;
      EXPECT_LE(whole, 3u) << w.id;
      EXPECT_LT(len > whole * kSecond ? len - whole * kSecond : whole * kSecond - len, kSlack) << w.id;
      if (whole == 1) ++one_second;
    } else {
      // The last is the window open at SIGTERM, closed when the daemon got
      // to it (scheduling latency on a loaded machine, bounded generously).
      EXPECT_LE(w.start_unix_ns, sigterm_unix_ns + kSlack) << w.id;
      EXPECT_GE(w.end_unix_ns + kSlack, sigterm_unix_ns) << w.id;
      EXPECT_LE(w.end_unix_ns, sigterm_unix_ns + 3 * kSecond) << w.id;
    }
    Profile p = LoadCapture(w.path);
    sum += p.total_samples();
    // Every window holds samples (49 Hz on each CPU, idle ones too), except
    // one too short to meet a tick: the window open at SIGTERM is a few ms
    // long when the signal comes right after a boundary (CI saw 6 ms, 0
    // samples).
    if (len >= kSecond / 5) EXPECT_GT(p.total_samples(), 0u) << w.id << ", " << len << " ns";
    // Per-window PTT: each CPU's interval rows continue where the previous
    // window's stopped, and busy + idle + interrupts fill them.
    ASSERT_TRUE(p.ptt.recorded) << w.id;
    for (const PttCpuInterval& c : p.ptt.intervals) {
      if (cpu_end.count(c.cpu)) EXPECT_EQ(c.start_ns, cpu_end[c.cpu]) << w.id << " cpu " << c.cpu;
      cpu_end[c.cpu] = c.end_ns;
      ptt_ns += c.busy_ns + c.idle_ns + c.hardirq_ns + c.softirq_ns;
      ptt_span += c.end_ns - c.start_ns;
    }
  }
  // Most windows are one second: the schedule holds, late closes are rare.
  EXPECT_GE(one_second * 2, windows.size() - 2) << one_second << " of " << windows.size() - 2;
  // Exact in 10 of 10 idle and 10 of 10 loaded runs since a shortfall moves
  // across (docs/ptt.md); before, an idle CI machine came to 1.0515.
  EXPECT_NEAR(static_cast<double>(ptt_ns) / static_cast<double>(ptt_span), 1.0, 0.01);

  // The report over the store is the sum of the windows.
  auto [code, text] = RunCapture({kArcprof, "report", "--store", store, "--since", "1h"});
  ASSERT_EQ(code, 0) << text;
  EXPECT_NE(text.find("Total samples:      " + std::to_string(sum) + "\n"), std::string::npos) << text;
  auto [fcode, folded] = RunCapture({kArcprof, "export", "--format", "folded", "--store", store});
  ASSERT_EQ(fcode, 0);
  uint64_t folded_sum = 0;
  std::istringstream lines(folded);
  for (std::string line; std::getline(lines, line);) folded_sum += std::stoull(line.substr(line.rfind(' ') + 1));
  EXPECT_EQ(folded_sum, sum);

  // A corrupt window: skipped with a warning, the rest still reads.
  {
    std::ofstream out(windows[1].path, std::ios::binary | std::ios::trunc);
    out << "SQLite format 3" << std::string(4000, 'x');
  }
  Subprocess report({kArcprof, "report", "--store", store});
  const int report_code = report.Wait();
  EXPECT_EQ(report_code, 0) << report.stderr_text();
  EXPECT_EQ(Count(report.stderr_text(), "warning: skipped window " + windows[1].id), 1u) << report.stderr_text();
  auto [icode, info] = RunCapture({kArcprof, "store", "info", "--store", store});
  EXPECT_EQ(icode, 0);
  EXPECT_NE(info.find("unreadable"), std::string::npos) << info;
}

TEST(ContinuousRuntime, SigkillLosesAtMostTheWindowInProgressAndARestartAppends) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string store = tmp.path("store");
  {
    Subprocess daemon(Continuous(store));
    ASSERT_TRUE(WaitForWindows(store, 2, 20)) << daemon.stderr_text();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // mid-window
    daemon.Signal(SIGKILL);
    daemon.Wait();
  }
  const std::vector<StoredWindow> before = Windows(store);
  ASSERT_GE(before.size(), 2u);
  for (const StoredWindow& w : before) EXPECT_TRUE(ReadCapture(w.path).ok()) << w.id;

  Subprocess again(Continuous(store));
  ASSERT_TRUE(again.WaitForStderr("continuous capture", 20)) << again.stderr_text();
  ASSERT_TRUE(WaitForWindows(store, before.size() + 2, 20)) << again.stderr_text();
  again.Signal(SIGINT);
  ASSERT_EQ(again.Wait(), 0) << again.stderr_text();

  const std::vector<StoredWindow> after = Windows(store);
  ASSERT_GE(after.size(), before.size() + 2);
  std::set<std::string> sessions;
  for (const StoredWindow& w : after) {
    EXPECT_TRUE(ReadCapture(w.path).ok()) << w.id;
    sessions.insert(w.id.substr(28));
  }
  EXPECT_EQ(sessions.size(), 2u);
  // The earlier windows are untouched.
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].id, before[i].id);
    EXPECT_EQ(after[i].bytes, before[i].bytes);
  }
  for (const auto& e : std::filesystem::directory_iterator(store)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }
}

TEST(ContinuousRuntime, FullDiskKeepsTheWindowInMemoryLogsOnceAndRecovers) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string mnt = tmp.path("mnt");
  ASSERT_EQ(mkdir(mnt.c_str(), 0700), 0);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k,mode=0700") != 0) {
    if (InCi()) FAIL() << "cannot mount a tmpfs: " << strerror(errno);
    GTEST_SKIP() << "cannot mount a tmpfs: " << strerror(errno);
  }
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const std::string store = mnt + "/store";
  Subprocess daemon(Continuous(store));
  ASSERT_TRUE(daemon.WaitForStderr("cannot write window", 20)) << daemon.stderr_text();
  std::this_thread::sleep_for(std::chrono::seconds(3));  // three more windows fail
  ASSERT_EQ(mount("tmpfs", mnt.c_str(), "tmpfs", MS_REMOUNT, "size=64m,mode=0700"), 0) << strerror(errno);
  ASSERT_TRUE(daemon.WaitForStderr("the store is writable again", 20)) << daemon.stderr_text();
  ASSERT_TRUE(WaitForWindows(store, 2, 20));
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();
  // One error line for the whole outage (one a minute), no crash.
  EXPECT_EQ(Count(daemon.stderr_text(), "cannot write window"), 1u) << daemon.stderr_text();
  const std::vector<StoredWindow> windows = Windows(store);
  ASSERT_GE(windows.size(), 2u);
  // The window written when the disk came back holds the whole outage:
  // nothing was lost. (A short first window may still fit on the small file
  // system before it fills: compact captures of a quiet second are small.)
  uint64_t longest = 0;
  for (const StoredWindow& w : windows) longest = std::max(longest, w.end_unix_ns - w.start_unix_ns);
  EXPECT_GE(longest, 3'000'000'000ull) << daemon.stderr_text();
  for (size_t i = 0; i + 1 < windows.size(); ++i) EXPECT_EQ(windows[i].end_unix_ns, windows[i + 1].start_unix_ns);
  for (const StoredWindow& w : windows) EXPECT_TRUE(ReadCapture(w.path).ok()) << w.id;
}

// The store directory deleted under a running daemon (a cleanup job, an
// operator): windows fail to write with one clear line, and SIGTERM still
// ends it promptly (once reported as ignored; with --push the sender thread
// reads the vanished store too). The window in memory is lost, said plainly.
TEST(ContinuousRuntime, SigtermEndsItAfterTheStoreDirectoryWasDeleted) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string store = tmp.path("store");
  Subprocess daemon(Continuous(store, {"--push", "http://127.0.0.1:1"}));
  ASSERT_TRUE(WaitForWindows(store, 1, 20)) << daemon.stderr_text();
  std::filesystem::remove_all(store);
  ASSERT_TRUE(daemon.WaitForStderr("cannot write window", 20)) << daemon.stderr_text();
  const auto start = std::chrono::steady_clock::now();
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 1) << daemon.stderr_text();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_NE(daemon.stderr_text().find("the last window could not be written and is lost"), std::string::npos)
      << daemon.stderr_text();
  EXPECT_EQ(Count(daemon.stderr_text(), "cannot write window"), 1u) << daemon.stderr_text();
}

TEST(ContinuousRuntime, RefusesForeignAndReadOnlyStoresBeforeSampling) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string foreign = tmp.path("foreign");
  ASSERT_EQ(mkdir(foreign.c_str(), 0700), 0);
  ASSERT_EQ(chown(foreign.c_str(), 65534, 65534), 0);
  Subprocess refused({kArcprof, "continuous", "--store", foreign});
  EXPECT_EQ(refused.Wait(), 1);
  EXPECT_EQ(refused.stderr_text(),
            "arcprof: " + foreign + ": owned by uid 65534, not by this user (uid 0); use a store directory of your own\n");

  const std::string ro = tmp.path("ro");
  ASSERT_EQ(mkdir(ro.c_str(), 0700), 0);
  if (mount("tmpfs", ro.c_str(), "tmpfs", 0, "size=1m,mode=0700") != 0) GTEST_SKIP() << "no tmpfs";
  ASSERT_EQ(mkdir((ro + "/store").c_str(), 0700), 0);
  ASSERT_EQ(mount("tmpfs", ro.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "size=1m,mode=0700"), 0);
  Subprocess readonly({kArcprof, "continuous", "--store", ro + "/store"});
  EXPECT_EQ(readonly.Wait(), 1);
  umount2(ro.c_str(), MNT_DETACH);
  EXPECT_EQ(readonly.stderr_text(),
            "arcprof: " + ro + "/store: cannot write to the store directory: Read-only file system\n");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ContinuousRuntime, SighupReopensTheLogAndKeepsCapturing) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string log = tmp.path("arcprof.log");
  Subprocess daemon(Continuous(tmp.path("store"), {"--log", log}));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ReadFile(log).find("continuous capture") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(ReadFile(log).find("continuous capture"), std::string::npos) << daemon.stderr_text();
  ASSERT_EQ(rename(log.c_str(), (log + ".1").c_str()), 0);  // what logrotate does
  daemon.Signal(SIGHUP);
  ASSERT_TRUE(WaitForWindows(tmp.path("store"), 2, 20));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0);
  EXPECT_EQ(daemon.stderr_text(), "");  // everything went to the log
  EXPECT_NE(ReadFile(log + ".1").find("continuous capture"), std::string::npos);
  const std::string reopened = ReadFile(log);
  EXPECT_NE(reopened.find("stopped by Terminated"), std::string::npos) << reopened;
  EXPECT_EQ(reopened.find("continuous capture"), std::string::npos) << reopened;
}

// A local user who can write the log's directory replaces the log by a FIFO
// before logrotate's SIGHUP (issue 23): the reopen must not block in open()
// until someone reads the FIFO. The FIFO is refused with one line in the old
// log, and windows keep coming; a later SIGHUP with a regular file reopens.
TEST(ContinuousRuntime, AFifoInPlaceOfTheLogIsRefusedAndWindowsKeepComing) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string log = tmp.path("arcprof.log");
  const std::string store = tmp.path("store");
  Subprocess daemon(Continuous(store, {"--log", log}));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ReadFile(log).find("continuous capture") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(ReadFile(log).find("continuous capture"), std::string::npos) << daemon.stderr_text();
  ASSERT_EQ(rename(log.c_str(), (log + ".1").c_str()), 0);
  ASSERT_EQ(mkfifo(log.c_str(), 0666), 0) << strerror(errno);
  daemon.Signal(SIGHUP);
  const size_t before = Windows(store).size();
  // A blocked daemon writes no window: three more must come within 20 s.
  EXPECT_TRUE(WaitForWindows(store, before + 3, 20)) << daemon.stderr_text();
  // A daemon blocked in open() is released, so that the test ends either way.
  if (const int reader = open(log.c_str(), O_RDONLY | O_NONBLOCK); reader >= 0) close(reader);
  const std::string old_log = ReadFile(log + ".1");
  EXPECT_EQ(Count(old_log, "not a regular file"), 1u) << old_log;
  // The FIFO replaced by a regular file: the next SIGHUP reopens.
  ASSERT_EQ(unlink(log.c_str()), 0);
  daemon.Signal(SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0);
  EXPECT_NE(ReadFile(log).find("stopped by Terminated"), std::string::npos) << ReadFile(log);
}

// The window being built is bounded: past --window-max-size its frames and
// call trees are closed into the store early, with a log line, and the next
// window runs to the scheduled boundary (docs/performance.md, "Memory and open
// files under churn").
TEST(ContinuousRuntime, AWindowPastItsSizeLimitClosesEarly) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string store = tmp.path("store");
  // 999 Hz of the whole machine: a 16 KiB window is full within a second or
  // two even on an idle machine (every CPU's idle and interrupt stacks).
  std::vector<std::string> argv = {kArcprof, "continuous", "--store", store, "--window", "60s", "--no-java",
                                   "-F", "999", "--window-max-size", "16k"};
  Subprocess daemon(argv);
  ASSERT_TRUE(daemon.WaitForStderr("continuous capture", 20)) << daemon.stderr_text();
  ASSERT_TRUE(daemon.WaitForStderr("window closed early", 20)) << daemon.stderr_text();
  ASSERT_TRUE(WaitForWindows(store, 2, 20)) << daemon.stderr_text();
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();
  const std::vector<StoredWindow> windows = Windows(store);
  ASSERT_GE(windows.size(), 3u);  // at least two early ones and the last
  // Early windows are far shorter than --window.
  for (size_t i = 0; i + 1 < windows.size(); ++i) {
    EXPECT_LT(windows[i].end_unix_ns - windows[i].start_unix_ns, 30ull * 1000000000ull);
  }
  EXPECT_NE(daemon.stderr_text().find("(limit 16 KiB)"), std::string::npos) << daemon.stderr_text();
}

// Interned names released at every window close (a 1-byte budget): the
// windows after the first are named as well as the first, nothing crashes.
TEST(ContinuousRuntime, NamesReleasedAtEveryWindowCloseStillNameEveryWindow) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string store = tmp.path("store");
  Subprocess daemon(Continuous(store, {"-F", "499", "--names-max-size", "1"}));
  ASSERT_TRUE(daemon.WaitForStderr("continuous capture", 20)) << daemon.stderr_text();
  ASSERT_TRUE(WaitForWindows(store, 4, 20)) << daemon.stderr_text();
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();
  const std::vector<StoredWindow> windows = Windows(store);
  ASSERT_GE(windows.size(), 4u);
  // Each full window on its own: kernel frames named (every CPU's idle or
  // timer path). Not the first (the daemon's start) nor the last (cut short by
  // SIGTERM: on a loaded machine it held no kernel frame once).
  for (size_t i = 1; i + 1 < windows.size(); ++i) {
    auto [code, folded] = RunCapture({kArcprof, "export", "-i", windows[i].path, "--format", "folded"});
    ASSERT_EQ(code, 0) << folded;
    EXPECT_NE(folded.find("_[k]"), std::string::npos) << "window " << i << ":\n" << folded.substr(0, 2000);
  }
}

// What a whole-machine daemon holds is a sum of budgets, not the machine's
// load: `-v` logs every holder at each window close, and the estimate stays
// below what docs/design.md ("Memory and files over a long session") sums
// the budgets to (~130 MiB of heap by design; 50-60 MiB measured on the
// loaded build machine, so the margin is wide). The compact kernel symbol
// table and the smaller answer cache of `continuous` are checked on their own.
TEST(ContinuousRuntime, WholeMachineHoldingsStayWithinTheirBudgets) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string store = tmp.path("store");
  std::vector<std::string> argv = {kArcprof, "-v", "continuous", "--store", store, "--window", "2s", "--no-java"};
  Subprocess daemon(argv);
  ASSERT_TRUE(daemon.WaitForStderr("continuous capture", 20)) << daemon.stderr_text();
  ASSERT_TRUE(WaitForWindows(store, 3, 30)) << daemon.stderr_text();
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();
  std::istringstream lines(daemon.stderr_text());
  std::string line;
  size_t closes = 0;
  auto field = [](const std::string& text, const std::string& name) -> long long {
    const size_t at = text.find(name + " ");
    if (at == std::string::npos) return -1;
    return std::stoll(text.substr(at + name.size() + 1));
  };
  while (std::getline(lines, line)) {
    const size_t at = line.find("held (KiB): ");
    if (at == std::string::npos) continue;
    const std::string held = line.substr(at);
    ++closes;
    const long long symbols = field(held, "symbols"), cfi = field(held, "CFI"),
                    kernel = field(held, "kernel symbols"), cache = field(held, "answer cache"),
                    names = field(held, "names"), window = field(held, "window"), total = field(held, "total");
    ASSERT_GE(symbols, 0) << line;
    ASSERT_GE(cfi, 0) << line;
    ASSERT_GE(kernel, 0) << line;
    ASSERT_GE(cache, 0) << line;
    ASSERT_GE(names, 0) << line;
    ASSERT_GE(window, 0) << line;
    ASSERT_GT(total, 0) << line;
    // Budgets (KiB): symbol tables and CFI 32 MiB each (a file over is let
    // go at the next lookup), names 16 MiB, the window 24 MB.
    EXPECT_LT(symbols, 40 << 10) << line;
    EXPECT_LT(cfi, 40 << 10) << line;
    EXPECT_LT(names, 20 << 10) << line;
    EXPECT_LT(window, 24 << 10) << line;
    // Compact kallsyms (~6 MiB of a 6.x kernel; the former layout held 12).
    EXPECT_LT(kernel, 10 << 10) << line;
    EXPECT_LE(cache, 3 << 10) << line;  // 2^14 user answers (1.75 MiB) and 2^11 file answers
    EXPECT_LT(total, 130 << 10) << line;
  }
  EXPECT_GE(closes, 3u) << daemon.stderr_text();
}

TEST(ContinuousRuntime, RetentionBySizeKeepsTheNewestWindows) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string store = tmp.path("store");
  Subprocess daemon(Continuous(store, {"--max-size", "1k"}));
  ASSERT_TRUE(daemon.WaitForStderr("continuous capture", 20)) << daemon.stderr_text();
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();
  // Every window is over 1 KiB: only the newest is kept; with 3+ written,
  // the older ones went, never sent, and that is said.
  const std::vector<StoredWindow> windows = Windows(store);
  ASSERT_EQ(windows.size(), 1u);
  EXPECT_NE(daemon.stderr_text().find("retention removed"), std::string::npos) << daemon.stderr_text();
  auto [code, info] = RunCapture({kArcprof, "store", "info", "--store", store, "--format", "json"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(info.find("\"max_bytes\": 1024"), std::string::npos) << info;
}

// The ticks of each process row of pid `pid` in a tprof JSON report (`--by
// pid`), by its name.
std::map<std::string, uint64_t> ProcessRows(const std::string& json, uint32_t pid) {
  std::map<std::string, uint64_t> out;
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.contains("rows")) return out;
  for (const auto& row : doc["rows"]) {
    if (row.value("level", "") == "pid" && row.value("pid", 0u) == pid) {
      out[row.value("name", "")] += row.value("ticks", uint64_t{0});
    }
  }
  return out;
}

// Two programs that held one pid one after the other, in windows of a store
// several seconds apart (tests/programs/pid_reuse.c chooses the pid with
// clone3's set_tid): each window is right by itself, and `report --store`
// and a `merge` of the two windows show two processes, not one that holds
// both programs' samples under the later name. Threads are summed by pid and
// process start (capture schema 8).
TEST(ContinuousRuntime, AReusedPidsProcessesStayApartAcrossWindows) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  TempDir tmp;
  const std::string store = tmp.path("store");
  Subprocess daemon(Continuous(store, {"-F", "199"}));
  ASSERT_TRUE(daemon.WaitForStderr("continuous capture of system", 20)) << daemon.stderr_text();
  // A CPU-second each, the second program 4.5 s after the first ended: a
  // window closed late is at most 3 s long, so no window holds both.
  auto [code, out] = RunCapture({kPidReuse, "1", "4.5"});
  if (code == 77 && !InCi()) {
    daemon.Signal(SIGTERM);
    daemon.Wait();
    GTEST_SKIP() << "clone3 with set_tid is refused here";
  }
  ASSERT_EQ(code, 0) << out;
  uint32_t pid = 0;
  ASSERT_EQ(std::sscanf(out.c_str(), "pid %u", &pid), 1) << out;
  // The window that holds the second program's end closes.
  const size_t windows_now = Windows(store).size();
  ASSERT_TRUE(WaitForWindows(store, windows_now + 2, 20));
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();

  // Each program's samples, and the window that holds most of them.
  std::string first_window, second_window;
  uint64_t first_most = 0, second_most = 0;
  for (const StoredWindow& w : Windows(store)) {
    const Profile p = LoadCapture(w.path);
    uint64_t first = 0, second = 0;
    for (const auto& [stack, n] : Stacks(p, [pid](const ThreadRecord& t) { return t.pid == pid; })) {
      for (const std::string& f : stack) {
        first += f == "first_program_work" ? n : 0;
        second += f == "second_program_work" ? n : 0;
      }
    }
    EXPECT_TRUE(first == 0 || second == 0) << "window " << w.id << " holds both programs";
    if (first > first_most) first_most = first, first_window = w.path;
    if (second > second_most) second_most = second, second_window = w.path;
  }
  ASSERT_FALSE(first_window.empty());
  ASSERT_FALSE(second_window.empty());

  // Two process rows of the pid in a report, each with its program's samples.
  auto expect_two_processes = [&](const std::string& what, const std::vector<std::string>& report_argv,
                                  uint64_t min_samples) {
    auto [code, report] = RunCapture(report_argv);
    ASSERT_EQ(code, 0) << what << ": " << report;
    const std::map<std::string, uint64_t> rows = ProcessRows(report, pid);
    for (const auto& [name, ticks] : rows) std::cout << what << ": " << name << " " << ticks << "\n";
    EXPECT_EQ(rows.size(), 2u) << what << ": " << report;
    for (const char* program : {"reuse_first_", "reuse_second_"}) {
      auto it = rows.find(program + std::to_string(pid));
      EXPECT_GT(it == rows.end() ? 0 : it->second, min_samples) << what << ": " << program;
    }
  };
  expect_two_processes("report --store", {kArcprof, "report", "--store", store, "--by", "pid", "--format", "json"},
                       kReusedPidMinSamples);
  const std::string merged = tmp.path("merged.db");
  auto [merge_code, merge_out] = RunCapture({kArcprof, "merge", first_window, second_window, "-o", merged});
  ASSERT_EQ(merge_code, 0) << merge_out;
  // The two windows hold a part of each program's second each.
  expect_two_processes("merge", {kArcprof, "report", "-i", merged, "--by", "pid", "--format", "json"},
                       kReusedPidMinWindowSamples);
}

}  // namespace
}  // namespace arcprof::testing

namespace arcprof::testing {
namespace {

// The capabilities packaging/arcprof.service grants (AmbientCapabilities=).
std::vector<std::string> UnitCapabilities() {
  std::ifstream unit(std::string(ARCPROF_SOURCE_DIR) + "/packaging/arcprof.service");
  std::vector<std::string> caps;
  for (std::string line; std::getline(unit, line);) {
    if (line.rfind("AmbientCapabilities=", 0) != 0) continue;
    std::istringstream words(line.substr(line.find('=') + 1));
    for (std::string cap; words >> cap;) caps.push_back(cap);
  }
  return caps;
}

// setpriv's spelling: CAP_SYS_PTRACE -> +sys_ptrace.
std::string SetprivCaps(const std::vector<std::string>& caps) {
  std::string out = "-all";
  for (std::string cap : caps) {
    for (char& c : cap) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += ",+" + cap.substr(4);
  }
  return out;
}


TEST(ContinuousPackaging, SystemdUnitVerifies) {
  ARCPROF_REQUIRE_TOOL("/usr/bin/systemd-analyze", "systemd");
  TempDir tmp;
  // verify checks that ExecStart exists: point it at this build's binary.
  std::ifstream in(std::string(ARCPROF_SOURCE_DIR) + "/packaging/arcprof.service");
  std::stringstream text;
  text << in.rdbuf();
  std::string unit = text.str();
  const std::string installed = "/usr/local/bin/arcprof";
  ASSERT_NE(unit.find("ExecStart=" + installed + " continuous"), std::string::npos);
  unit.replace(unit.find(installed), installed.size(), kArcprof);
  std::ofstream(tmp.path("arcprof.service")) << unit;
  auto [code, out] = RunCapture({"/bin/sh", "-c", "/usr/bin/systemd-analyze verify " + tmp.path("arcprof.service") + " 2>&1"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "");
  EXPECT_EQ(UnitCapabilities(), (std::vector<std::string>{"CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE", "CAP_SYSLOG",
                                                           "CAP_DAC_READ_SEARCH", "CAP_SETUID", "CAP_SETGID"}));
}

TEST(ContinuousPackaging, MakeInstallPutsBinaryAgentAndUnitTogether) {
  TempDir tmp;
  auto [code, out] = RunCapture({"/bin/sh", "-c",
                                 "DESTDIR=" + tmp.dir() + " cmake --install " + ARCPROF_BUILD_DIR +
                                     " --prefix /usr/local 2>&1"});
  ASSERT_EQ(code, 0) << out;
  const std::string root = tmp.dir() + "/usr/local";
  EXPECT_EQ(access((root + "/lib/arcprof/arcprof").c_str(), X_OK), 0);
  EXPECT_EQ(access((root + "/lib/arcprof/libarcprof_jvmti.so").c_str(), R_OK), 0);
  EXPECT_EQ(access((root + "/lib/systemd/system/arcprof.service").c_str(), R_OK), 0);
  std::error_code ec;
  EXPECT_EQ(std::filesystem::read_symlink(root + "/bin/arcprof", ec).string(), "../lib/arcprof/arcprof");
  // The installed binary runs (the agent sits next to it for java attach).
  auto [vcode, version] = RunCapture({root + "/bin/arcprof", "--version"});
  EXPECT_EQ(vcode, 0) << version;
}

// Runs continuous as uid/gid 65534 holding exactly `caps` (ambient), from a
// copy of the binary nobody can replace.
class AsNobody {
 public:
  AsNobody() {
    chmod(tmp_.dir().c_str(), 0755);
    std::filesystem::copy_file(kArcprof, tmp_.path("arcprof"));
    chmod(tmp_.path("arcprof").c_str(), 0755);
    store_parent_ = tmp_.path("state");
    mkdir(store_parent_.c_str(), 0700);
    chown(store_parent_.c_str(), 65534, 65534);
  }
  std::vector<std::string> Argv(const std::vector<std::string>& caps) const {
    const std::string set = SetprivCaps(caps);
    return {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=" + set,
            "--ambient-caps=" + set, "--bounding-set=" + set, "--", tmp_.path("arcprof"), "continuous",
            "--store", store(), "--window", "1s"};
  }
  std::string store() const { return store_parent_ + "/store"; }

 private:
  TempDir tmp_;
  std::string store_parent_;
};

TEST(ContinuousPackaging, RunsAsAnUnprivilegedUserWithExactlyTheUnitsCapabilities) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ARCPROF_REQUIRE_TOOL("/usr/bin/setpriv", "util-linux");
  AsNobody run;
  // A root process on CPU in user and kernel code, so that a quiet machine
  // has user frames (python3 exports its interpreter's symbols) and kernel
  // frames (procfs reads) to name.
  Subprocess busy({"/usr/bin/python3", "-c",
                   "import os,time\nt=time.time()\nwhile time.time()-t<30:\n"
                   "  os.stat('/'); open('/proc/self/stat').read(); sum(range(2000))"});
  Subprocess daemon(run.Argv(UnitCapabilities()));
  ASSERT_TRUE(daemon.WaitForStderr("continuous capture of system", 20)) << daemon.stderr_text();
  ASSERT_TRUE(WaitForWindows(run.store(), 2, 20)) << daemon.stderr_text();
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();
  EXPECT_EQ(daemon.stderr_text().find("without CAP_"), std::string::npos) << daemon.stderr_text();
  struct stat st {};
  ASSERT_EQ(stat(run.store().c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
  // Named kernel frames (CAP_SYSLOG) and named frames of root's processes.
  auto store = WindowStore::OpenForReading(run.store());
  ASSERT_TRUE(store);
  auto all = store->ReadRange(0, UINT64_MAX, nullptr);
  ASSERT_TRUE(all) << all.error().message;
  size_t kernel_named = 0, user_named = 0;
  for (const FrameRecord& f : all->frames.all()) {
    if (f.kind == FrameKind::kKernel && !f.symbol.empty()) ++kernel_named;
    if (f.kind == FrameKind::kNative && !f.symbol.empty()) ++user_named;
  }
  EXPECT_GT(kernel_named, 10u);
  EXPECT_GT(user_named, 10u);
}

TEST(ContinuousPackaging, AMissingCapabilityIsOneClearLine) {
  ARCPROF_REQUIRE_RECORD_CAPABLE();
  ARCPROF_REQUIRE_TOOL("/usr/bin/setpriv", "util-linux");
  for (const std::string missing : {"CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE", "CAP_SETUID"}) {
    AsNobody run;
    std::vector<std::string> caps;
    for (const std::string& c : UnitCapabilities()) {
      if (c != missing) caps.push_back(c);
    }
    Subprocess daemon(run.Argv(caps));
    EXPECT_EQ(daemon.Wait(), 1) << missing;
    const std::string& err = daemon.stderr_text();
    EXPECT_EQ(err.rfind("arcprof: arcprof continuous needs " + missing + " ", 0), 0u) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

}  // namespace
}  // namespace arcprof::testing
