// Runtime tests of `record --ptt`: the real binary and BPF programs, checked
// against the kernel's own accounting (schedstat, context switch counts,
// getrusage) and against libbpf-tools' softirqs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include "model/metric.h"
#include "store/window_store.h"
#include "tests/loader/runtime_util.h"
#include "tests/layer_names.h"

namespace arcprof::testing {
namespace {

const std::string kArcprof = ARCPROF_BIN;
const std::string kWorkload = std::string(ARCPROF_TEST_PROGRAMS) + "/ptt_workload";
const std::string kNetLoad = std::string(ARCPROF_TEST_PROGRAMS) + "/ptt_net_load";
const std::string kSoftirqsTool = "/usr/sbin/softirqs";
const std::string kPidReuse = std::string(ARCPROF_TEST_PROGRAMS) + "/pid_reuse";
// AReusedPidsProcessesHaveRowsOfTheirOwn: each program's CPU time in its own
// row, in ms (each spins a CPU-second; one row holding both had two).
constexpr double kReusedPidMinRowMs = 600;
constexpr double kReusedPidMaxRowMs = 1500;

struct KernelThread {
  uint64_t schedstat_ns = 0;
  uint64_t ctxsw = 0;
};

// The workload's own lines: "ptt_workload tid=N name=NAME schedstat_ns=N ctxsw=N".
std::map<std::string, std::pair<uint32_t, KernelThread>> ParseWorkload(const std::string& text) {
  std::map<std::string, std::pair<uint32_t, KernelThread>> out;
  static const std::regex line(
      R"(ptt_workload tid=(\d+) name=(\S+) schedstat_ns=(\d+) ctxsw=(\d+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator();
       ++it) {
    KernelThread k{std::stoull((*it)[3]), std::stoull((*it)[4])};
    out[(*it)[2]] = {static_cast<uint32_t>(std::stoul((*it)[1])), k};
  }
  return out;
}

const PttThread* FindThread(const Profile& p, uint32_t tid) {
  for (const PttThread& t : p.ptt.threads) {
    if (t.tid == tid) return &t;
  }
  return nullptr;
}

// Time the hypervisor took from this VM's CPUs (/proc/stat "cpu" steal, in
// USER_HZ ticks), in ns. The scheduler's clock excludes it from schedstat;
// PTT measures time on CPU with the monotonic clock, which includes it.
double StealNs() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double v[8] = {};
  in >> cpu;
  for (double& x : v) in >> x;
  return v[7] * 1e9 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

bool MachineHasPmu() { return access("/sys/bus/event_source/devices/cpu", F_OK) == 0; }

class PttRuntime : public ::testing::Test {
 protected:
  void SetUp() override { ARCPROF_REQUIRE_RECORD_CAPABLE(); }
  TempDir tmp_;
};

TEST_F(PttRuntime, ThreadTimesMatchSchedstatAndDispatchesMatchContextSwitches) {
  const std::string db = tmp_.path("ptt.db");
  // -F 99: the sampler's own timer interrupts land in the interrupt time of
  // the thread they hit; keep them small next to the 3% tolerance.
  const double steal_before = StealNs();
  Subprocess rec({kArcprof, "record", "--ptt", "--ptt-events", "instructions,cycles,page-faults",
                  "-F", "99", "-o", db, "--", kWorkload, "3"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  // Steal time while the workload ran: PTT may exceed schedstat by up to that.
  const double steal_ns = StealNs() - steal_before;
  const auto kernel = ParseWorkload(rec.stderr_text());
  ASSERT_EQ(kernel.count("ptt_busy"), 1u) << rec.stderr_text();
  ASSERT_EQ(kernel.count("ptt_alternate"), 1u) << rec.stderr_text();

  Profile p = LoadCapture(db);
  ASSERT_TRUE(p.ptt.recorded);
  double ptt_ms[2] = {0, 0}, kernel_ms[2] = {0, 0};
  int i = 0;
  for (const char* name : {"ptt_busy", "ptt_alternate"}) {
    const auto& [tid, k] = kernel.at(name);
    const PttThread* t = FindThread(p, tid);
    ASSERT_NE(t, nullptr) << name << " tid " << tid << " missing from the PTT table";
    EXPECT_EQ(t->comm, name);
    // This kernel has no CONFIG_IRQ_TIME_ACCOUNTING: schedstat counts the
    // interrupts that hit the thread as its own time; PTT reports them apart.
    const double kernel_ns = static_cast<double>(k.schedstat_ns);
    EXPECT_NEAR(static_cast<double>(t->cpu_ns + t->interrupt_ns()), kernel_ns,
                kernel_ns * 0.03 + steal_ns)
        << name << " (steal during the run: " << steal_ns / 1e6 << " ms)";
    EXPECT_NEAR(static_cast<double>(t->cpu_ns), kernel_ns, kernel_ns * 0.03 + steal_ns) << name;
    // PTT also sees the final switch-out at thread exit, after the thread read
    // its own counts.
    const double ctxsw = static_cast<double>(k.ctxsw);
    EXPECT_NEAR(static_cast<double>(t->dispatches), ctxsw, std::max(3.0, ctxsw * 0.05)) << name;
    ptt_ms[i] = static_cast<double>(t->cpu_ns + t->interrupt_ns()) / 1e6;
    kernel_ms[i] = kernel_ns / 1e6;
    ++i;
  }
  // 10 ms busy / 10 ms asleep: half the CPU of the spinning thread (both in
  // the kernel's definition, interrupts included).
  const double ptt_ratio = ptt_ms[1] / ptt_ms[0];
  const double kernel_ratio = kernel_ms[1] / kernel_ms[0];
  EXPECT_NEAR(ptt_ratio, kernel_ratio, kernel_ratio * 0.03 + steal_ns / 1e6 / kernel_ms[0]);
  // The workload's own half: PTT is off it by at most what the kernel's
  // ratio is, plus 0.05. Other work on the machine stretches the 10 ms
  // sleeps (wake-ups wait for a CPU) and the ratio drops well below 0.5 for
  // both; a fixed band around 0.5 failed 2 runs in 20 with two builds
  // running, while PTT matched the kernel's ratio in all of them.
  EXPECT_NEAR(ptt_ratio, 0.5, std::abs(kernel_ratio - 0.5) + 0.05)
      << "busy " << ptt_ms[0] << " ms, alternate " << ptt_ms[1] << "; the kernel's ratio " << kernel_ratio;

  // The counter path with a software event every machine has: ptt_busy
  // faults in 4000 fresh pages; the process total matches getrusage.
  ASSERT_EQ(p.ptt.events.size(), 3u);
  EXPECT_EQ(p.ptt.events[2].name, "page-faults");
  ASSERT_TRUE(p.ptt.events[2].available);
  const PttThread* busy = FindThread(p, kernel.at("ptt_busy").first);
  EXPECT_GE(busy->events[2], 4000u);
  EXPECT_LE(busy->events[2], 4200u);
  std::smatch m;
  const std::string& text = rec.stderr_text();
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(ptt_workload pid=(\d+) minflt=(\d+) majflt=(\d+))")));
  const uint32_t pid = static_cast<uint32_t>(std::stoul(m[1]));
  const double rusage_faults = std::stod(m[2]) + std::stod(m[3]);
  double ptt_faults = 0;
  for (const PttThread& t : p.ptt.threads) {
    if (t.pid == pid) ptt_faults += static_cast<double>(t.events[2]);
  }
  // getrusage also counts the faults between arcprof's fork and the start of
  // PTT, and misses those of the exit path: a few dozen either way.
  EXPECT_NEAR(ptt_faults, rusage_faults, rusage_faults * 0.02 + 100);

  // Hardware counters: reported as unavailable, never as zeros.
  auto [code, report] = RunCapture({kArcprof, "report", "-i", db, "--view", "ptt"});
  ASSERT_EQ(code, 0);
  if (MachineHasPmu()) {
    EXPECT_TRUE(p.ptt.events[0].available);
    EXPECT_NE(report.find("CPI"), std::string::npos) << report;
  } else {
    EXPECT_FALSE(p.ptt.events[0].available);
    EXPECT_FALSE(p.ptt.events[1].available);
    EXPECT_NE(report.find("instructions: not available on this machine"), std::string::npos)
        << report;
    EXPECT_NE(report.find("cycles: not available on this machine"), std::string::npos) << report;
    EXPECT_EQ(report.find("INSTRUCTIONS"), std::string::npos) << report;
    EXPECT_NE(report.find("PAGE-FAULTS"), std::string::npos) << report;
  }
  EXPECT_NE(report.find("ptt_alternate"), std::string::npos) << report;
}

TEST_F(PttRuntime, CpuTimeAddsUpToWallTimeAndPttIsDefaultForWholeMachine) {
  const std::string db = tmp_.path("machine.db");
  Subprocess load({kWorkload, "4"});
  Subprocess rec({kArcprof, "record", "-d", "3", "-o", db});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  ASSERT_TRUE(p.ptt.recorded) << "PTT must be on by default for whole-machine recordings";
  ASSERT_FALSE(p.ptt.intervals.empty());
  std::map<uint32_t, PttCpuInterval> per_cpu;
  for (const PttCpuInterval& row : p.ptt.intervals) {
    const double wall = static_cast<double>(row.end_ns - row.start_ns);
    const double sum =
        static_cast<double>(row.busy_ns + row.idle_ns + row.hardirq_ns + row.softirq_ns);
    EXPECT_NEAR(sum, wall, wall * 0.02) << "cpu " << row.cpu << " at " << row.start_ns;
    PttCpuInterval& total = per_cpu[row.cpu];
    if (total.start_ns == 0) total.start_ns = row.start_ns;
    total.end_ns = row.end_ns;
    total.busy_ns += row.busy_ns;
    total.idle_ns += row.idle_ns;
    total.hardirq_ns += row.hardirq_ns;
    total.softirq_ns += row.softirq_ns;
  }
  EXPECT_EQ(per_cpu.size(), std::thread::hardware_concurrency());
  for (const auto& [cpu, t] : per_cpu) {
    const double wall = static_cast<double>(t.end_ns - t.start_ns);
    EXPECT_GT(wall, 2.5e9);
    EXPECT_NEAR(static_cast<double>(t.busy_ns + t.idle_ns + t.hardirq_ns + t.softirq_ns), wall,
                wall * 0.02)
        << "cpu " << cpu;
  }
  // The interrupt table holds the local timer (the sampler's hrtimer runs in it).
  bool timer = false;
  for (const PttIrqVector& v : p.ptt.irq_vectors) timer = timer || v.name == "LOC";
  EXPECT_TRUE(timer);

  // The irq view: per-CPU shares of the whole recording add up to 100%.
  auto [code, json_text] =
      RunCapture({kArcprof, "report", "-i", db, "--view", "irq", "--format", "json"});
  ASSERT_EQ(code, 0);
  const auto doc = nlohmann::json::parse(json_text);
  ASSERT_EQ(doc["per_cpu"].size(), per_cpu.size() + 1);  // + the "all" row
  for (const auto& row : doc["per_cpu"]) {
    const double total = row["busy_pct"].get<double>() + row["idle_pct"].get<double>() +
                         row["hardirq_pct"].get<double>() + row["softirq_pct"].get<double>();
    EXPECT_NEAR(total, 100.0, 2.0) << row.dump();
  }
  EXPECT_GE(doc["intervals"].size(), 3u * (per_cpu.size() + 1));
  auto [text_code, text] = RunCapture({kArcprof, "report", "-i", db, "--view", "irq"});
  EXPECT_EQ(text_code, 0);
  EXPECT_NE(text.find("BUSY%"), std::string::npos);
  EXPECT_NE(text.find("LOC"), std::string::npos);
}

// A continuous capture's windows each hold a thread's time since the
// previous window (the map counts from the start): summed over the windows
// they are the thread's schedstat time, and no window holds more than its
// own length of one thread's time (a cumulative row would).
TEST_F(PttRuntime, ContinuousWindowsHoldEachThreadsShareAndSumToSchedstat) {
  const std::string store = tmp_.path("store");
  Subprocess daemon({kArcprof, "continuous", "--store", store, "--window", "1s", "--no-java", "-F", "99"});
  ASSERT_TRUE(daemon.WaitForStderr("continuous capture of system", 20)) << daemon.stderr_text();
  const double steal_before = StealNs();
  Subprocess workload({kWorkload, "3"});
  ASSERT_EQ(workload.Wait(), 0) << workload.stderr_text();
  const double steal_ns = StealNs() - steal_before;
  // The window holding the workload's end closes within a second and a half.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  daemon.Signal(SIGTERM);
  ASSERT_EQ(daemon.Wait(), 0) << daemon.stderr_text();
  const auto kernel = ParseWorkload(workload.stderr_text());
  ASSERT_EQ(kernel.count("ptt_busy"), 1u) << workload.stderr_text();

  auto windows = WindowStore::OpenForReading(store);
  ASSERT_TRUE(windows) << windows.error().message;
  std::map<uint32_t, double> sum_ns;  // tid -> summed over the windows
  std::map<uint32_t, size_t> windows_with;
  for (const StoredWindow& w : windows->List()) {
    const Profile p = LoadCapture(w.path);
    // PTT's span of the window runs from the previous close to this one: a
    // close that runs late (a loaded machine: 57 and 76 ms past a 1 s
    // window) gives its running threads that much more, and the next window
    // that much less.
    uint64_t ptt_start = UINT64_MAX, ptt_end = 0;
    for (const auto& i : p.ptt.intervals) {
      ptt_start = std::min(ptt_start, i.start_ns);
      ptt_end = std::max(ptt_end, i.end_ns);
    }
    const double wall_ns = static_cast<double>(w.end_unix_ns - w.start_unix_ns);
    const double len_ns = ptt_end > ptt_start ? std::max(wall_ns, static_cast<double>(ptt_end - ptt_start)) : wall_ns;
    for (const char* name : {"ptt_busy", "ptt_alternate"}) {
      const uint32_t tid = kernel.at(name).first;
      const PttThread* t = FindThread(p, tid);
      if (t == nullptr) continue;
      const double ns = static_cast<double>(t->cpu_ns + t->interrupt_ns());
      // One thread runs on one CPU at a time: at most the window's length
      // (PTT's span of it), plus 50 ms.
      EXPECT_LE(ns, len_ns + 50e6) << name << " in " << w.id;
      sum_ns[tid] += ns;
      ++windows_with[tid];
    }
  }
  for (const char* name : {"ptt_busy", "ptt_alternate"}) {
    const auto& [tid, k] = kernel.at(name);
    // 3 s in 1 s windows: the thread's time is split over several windows.
    EXPECT_GE(windows_with[tid], 3u) << name;
    const double kernel_ns = static_cast<double>(k.schedstat_ns);
    EXPECT_NEAR(sum_ns[tid], kernel_ns, kernel_ns * 0.03 + steal_ns) << name;
  }
}

TEST_F(PttRuntime, CommandRecordingsHaveNoPttUnlessAsked) {
  const std::string db = tmp_.path("cmd.db");
  Subprocess rec({kArcprof, "record", "-o", db, "--", kWorkload, "0.3"});
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  Profile p = LoadCapture(db);
  EXPECT_FALSE(p.ptt.recorded);
  Subprocess report({kArcprof, "report", "-i", db, "--view", "ptt"});
  EXPECT_EQ(report.Wait(), 1);
  EXPECT_NE(report.stderr_text().find("record it with `arcprof record --ptt`"), std::string::npos)
      << report.stderr_text();
}

// Two programs one after the other under one pid in one recording
// (tests/programs/pid_reuse.c chooses the pid with clone3's set_tid), a
// CPU-second each: PTT has a row of each process (its BPF map keys threads by
// tid and process start), each with its own program's second, and the second
// program's thread record has its row's start, so the CPU time per sample of
// the record is its own process's (the first's record retires under
// "[exited processes]"). Before: one row of both programs' two seconds.
TEST_F(PttRuntime, AReusedPidsProcessesHaveRowsOfTheirOwn) {
  const std::string db = tmp_.path("reuse.db");
  Subprocess rec({kArcprof, "record", "-q", "--ptt", "-o", db, "--", kPidReuse, "1"});
  const int code = rec.Wait();
  if (code == 77 && !InCi()) GTEST_SKIP() << "clone3 with set_tid is refused here: " << rec.stderr_text();
  ASSERT_EQ(code, 0) << rec.stderr_text();
  const Profile p = LoadCapture(db);
  ASSERT_TRUE(p.ptt.recorded);
  const ThreadRecord* second = nullptr;
  for (const ThreadRecord& t : p.threads) {
    if (t.pid == model::kExitedProcessesPid) continue;
    for (const auto& [stack, n] : Stacks(p, [&](const ThreadRecord& r) { return &r == &t; })) {
      if (std::find(stack.begin(), stack.end(), "second_program_work") != stack.end()) second = &t;
    }
  }
  ASSERT_NE(second, nullptr) << "no samples of the second program";
  ASSERT_NE(second->process_start_ns, 0u);
  const uint32_t pid = second->pid;
  std::vector<const PttThread*> rows;
  for (const PttThread& t : p.ptt.threads) {
    if (t.pid == pid && t.tid == pid) rows.push_back(&t);
  }
  for (const PttThread* t : rows) {
    std::cout << pid << " " << t->comm << " started " << t->process_start_ns << ": " << t->cpu_ns / 1e6 << " ms\n";
  }
  ASSERT_EQ(rows.size(), 2u) << "the pid's two processes in " << rows.size() << " rows";
  std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->process_start_ns < b->process_start_ns; });
  EXPECT_EQ(rows[1]->process_start_ns, second->process_start_ns) << "the record and the row of one thread";
  // (The first's row keeps the name PTT copied at its exec: the name it set
  // itself afterwards is known from samples, and its record has retired.)
  EXPECT_EQ(rows[1]->comm, "reuse_second");
  for (const PttThread* t : rows) {
    EXPECT_GT(t->cpu_ns / 1e6, kReusedPidMinRowMs) << t->comm;
    EXPECT_LT(t->cpu_ns / 1e6, kReusedPidMaxRowMs) << t->comm;
  }
  auto cpu = Metric::Select(p, "cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  EXPECT_TRUE(cpu->CpuMeasured(*second));
  // Its samples share out its own process's row (each node rounds to a µs).
  EXPECT_NEAR(static_cast<double>(cpu->Total(*second)), static_cast<double>(rows[1]->cpu_ns) / 1e3,
              static_cast<double>(second->tree.size()));
}

// NET_RX softirq time from loopback traffic, against libbpf-tools' softirqs.
// Both tools attach to softirq_entry/exit. The recording spans the tool's
// whole run and the traffic runs inside both, so both measure the same
// packets: their totals of NET_RX time must agree within 10%. (Rates over
// different seconds do not: under load the cost per packet moved by a third
// from one 4 s window to the next.) PTT reads 4-5% lower here: it takes the
// hardirqs nested in a softirq out of the softirq's time; the tool does not.
TEST_F(PttRuntime, NetRxSoftirqTimeAgreesWithSoftirqsTool) {
  if (access(kSoftirqsTool.c_str(), X_OK) != 0) {
    if (InCi()) FAIL() << kSoftirqsTool << " missing: scripts/install-deps.sh installs libbpf-tools";
    GTEST_SKIP() << kSoftirqsTool << " missing (Debian package libbpf-tools)";
  }
  const std::string db = tmp_.path("net.db");
  Subprocess rec({kArcprof, "record", "-d", "60", "-F", "99", "-o", db});
  ASSERT_TRUE(rec.WaitForStderr("recording system", 20)) << rec.stderr_text();
  // softirqs -N: nanoseconds; one summary after 8 s. Its stdout is read as
  // stderr, line-buffered so that its first line says it is attached.
  Subprocess tool({"/bin/sh", "-c", "exec /usr/bin/stdbuf -oL " + kSoftirqsTool + " -N 8 1 1>&2"});
  ASSERT_TRUE(tool.WaitForStderr("Tracing soft irq", 20)) << tool.stderr_text();
  const auto load_start = std::chrono::steady_clock::now();
  auto [load_code, load_out] = RunCapture({kNetLoad, "3"});
  ASSERT_EQ(load_code, 0) << load_out;
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  ASSERT_EQ(tool.Wait(), 0) << tool.stderr_text();
  rec.Signal(SIGINT);
  ASSERT_EQ(rec.Wait(), 0) << rec.stderr_text();
  // The traffic must have ended inside the tool's 8 s (it started after the
  // tool's first line); on a machine too slow for that the totals differ.
  ASSERT_LT(load_s, 7.5) << "the 3 s load took " << load_s << " s";
  const std::string tool_out = tool.stderr_text();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(tool_out, m, std::regex(R"(net_rx\s+(\d+))"))) << tool_out;
  const double tool_ns = std::stod(m[1]);

  Profile p = LoadCapture(db);
  ASSERT_TRUE(p.ptt.recorded);
  double ptt_ns = 0;
  for (const PttIrqVector& v : p.ptt.irq_vectors) {
    if (v.kind == IrqKind::kSoftIrq && v.name == "NET_RX") ptt_ns += static_cast<double>(v.ns);
  }
  EXPECT_GT(tool_ns, 3e6) << "3 s of loopback traffic should cost more than 3 ms of NET_RX";
  EXPECT_NEAR(ptt_ns, tool_ns, tool_ns * 0.10) << "ptt " << ptt_ns << " ns, softirqs " << tool_ns
                                               << " ns\n"
                                               << tool_out;
}

}  // namespace
}  // namespace arcprof::testing
