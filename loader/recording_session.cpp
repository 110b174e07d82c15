#include "loader/recording_session.h"

#include "common/clock.h"
#include "common/heap.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <unordered_map>
#include <unordered_set>
#include <cstring>
#include <ctime>
#include <vector>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "events.h"
#include "loader/cgroup_targets.h"
#include "loader/debuginfod_naming.h"
#include "loader/launcher.h"
#include "loader/perf_events.h"
#include "loader/record_extension.h"
#include "loader/value_source.h"
#include "loader/sample_processor.h"
#include "loader/sampler.h"
#include "loader/sideband.h"
#include "runtimes/runtime.h"
#include "symbolize/debuginfod.h"
#include "spaces/address_spaces.h"
#include "spaces/process_registry.h"
#include "symbolize/symbolizer.h"
#include "unwind/unwinder.h"

#ifndef ARCPROF_VERSION
#define ARCPROF_VERSION "0.0.0"
#endif

namespace arcprof {
using namespace arcprof::model;
namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<int> g_stop_count{0};
std::atomic<bool> g_stop_from_process{false};
std::atomic<bool> g_hangup{false};

void OnStopSignal(int sig, siginfo_t* info, void*) {
  g_stop_signal.store(sig);
  g_stop_from_process.store(info == nullptr || info->si_code != SI_KERNEL);
  g_stop_count.fetch_add(1);
}
void OnHangup(int) { g_hangup.store(true); }

// Signals whose default action would kill arcprof and lose the recording.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};
struct sigaction g_old[std::size(kStopSignals)] {}, g_old_hup {}, g_old_pipe {};

// The first sample ring of a recording of some processes (-p, a command)
// when --buffer-mb is not given: 4 MiB of RSS (mapped twice). A record that
// finds it a quarter full wakes the drain, which grows it eightfold before
// anything else (2 -> 16 -> 64 MiB at record's 999 Hz). 1 MiB lost 40-105
// samples at the start of a thread-heavy command on a machine at load 30,
// where the drain's wakeup comes late; 2 MiB lost 56-95 in 2 runs of 7.
constexpr uint64_t kFirstRingBytes = 2u << 20;
// How long the final drain may take once sampling has stopped.
constexpr uint64_t kFinalDrainNs = 5'000'000'000;
// The longest recording (-d) accepted.
constexpr double kMaxDurationS = 366.0 * 24 * 3600;

bool ProcessAlive(uint32_t pid) {
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

constexpr uint64_t kLivenessCheckNs = 200'000'000;

// The thread's CPU clock for the -v per-phase log (a system call, not the
// vDSO): 0 without -v, so a quiet daemon makes no such calls.
uint64_t PhaseCpuNs() { return spdlog::should_log(spdlog::level::debug) ? ThreadCpuNs() : 0; }
// At most this much of held samples (beyond it they are processed at once).
constexpr size_t kMaxHeldBytes = 64u << 20;

}  // namespace

StopSignals::StopSignals(bool hangup_reopens_log) {
  g_stop_signal.store(0);
  g_stop_count.store(0);
  g_hangup.store(false);
  struct sigaction sa {};
  sa.sa_sigaction = OnStopSignal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < std::size(kStopSignals); ++i) sigaction(kStopSignals[i], &sa, &g_old[i]);
  if (hangup_reopens_log) {
    struct sigaction hup {};
    hup.sa_handler = OnHangup;
    sigemptyset(&hup.sa_mask);
    sigaction(SIGHUP, &hup, &g_old_hup);
  } else {
    sigaction(SIGHUP, &sa, &g_old_hup);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &g_old_pipe);
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < std::size(kStopSignals); ++i) sigaction(kStopSignals[i], &g_old[i], nullptr);
  sigaction(SIGHUP, &g_old_hup, nullptr);
  sigaction(SIGPIPE, &g_old_pipe, nullptr);
}

int StopSignals::stop_signal() { return g_stop_signal.load(); }
int StopSignals::stop_count() { return g_stop_count.load(); }
bool StopSignals::stop_from_process() { return g_stop_from_process.load(); }
bool StopSignals::TakeHangup() { return g_hangup.exchange(false); }

bool OffCpuEnabled(const RecordOptions& options) {
  if (options.off_cpu.has_value()) return *options.off_cpu;
  return !options.command.empty() || !options.pids.empty();
}

std::string DescribeTarget(const RecordOptions& o) {
  if (!o.command.empty()) {
    std::string s = "command";
    for (const std::string& a : o.command) s += " " + a;
    return s;
  }
  if (!o.pids.empty()) {
    std::string s = "pids";
    for (size_t i = 0; i < o.pids.size(); ++i) s += (i ? "," : " ") + std::to_string(o.pids[i]);
    if (!o.cgroups.empty()) s += " " + o.cgroups.Describe();
    return s;
  }
  if (!o.cgroups.empty()) return "cgroups " + o.cgroups.Describe();
  return "system";
}

uint64_t RecordingSession::MonotonicNs() { return arcprof::MonotonicNs(); }

uint64_t RecordingSession::RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct RecordingSession::State {
  explicit State(const RecordOptions& o)
      : options(o),
        debuginfod(o.debuginfod_budget_s > 0
                       ? DebuginfodFetcher::FromEnvironment(std::chrono::milliseconds(
                             static_cast<int64_t>(o.debuginfod_budget_s * 1000)))
                       : nullptr),
        spaces(SpacesWith(o)),
        symbolizer(spaces, SymbolizerWith(o, debuginfod.get())) {}
  static AddressSpacesOptions SpacesWith(const RecordOptions& o) {
    AddressSpacesOptions ao;
    if (o.exited_retention_ns != 0) ao.exited_retention_ns = o.exited_retention_ns;
    return ao;
  }
  static SymbolizerOptions SymbolizerWith(const RecordOptions& o, DebuginfodFetcher* fetcher) {
    SymbolizerOptions so;
    so.debuginfod = fetcher;
    if (o.exited_retention_ns != 0)
      so.exited_jit_retention_ns = std::min(so.exited_jit_retention_ns, o.exited_retention_ns);
    if (o.answer_cache_bits != 0) {
      so.answer_cache_bits = o.answer_cache_bits;
    } else if (!o.command.empty() || !o.pids.empty()) {
      // Some processes, not the machine: the daemon's 2^14 answers (1.8 MiB,
      // where 2^16 is 7 MiB of a `record -- /bin/true`'s 46 MB).
      so.answer_cache_bits = 14;
    }
    if (o.symbol_budget_bytes != 0) so.symbol_budget_bytes = o.symbol_budget_bytes;
    return so;
  }
  RecordOptions options;
  EventSpec event;
  CallGraphMode mode = CallGraphMode::kHybrid;
  std::optional<LaunchedCommand> command;
  std::unique_ptr<Sampler> sampler;  // reset first in ~State: its callbacks use the rest
  std::unique_ptr<DebuginfodFetcher> debuginfod;  // before the symbolizer, which uses it
  AddressSpaces spaces;  // before the symbolizer, which names what they hold
  Symbolizer symbolizer;
  std::unique_ptr<Unwinder> unwinder;
  std::unique_ptr<SampleProcessor> processor;
  SidebandQueue sideband;
  std::unique_ptr<RecordContext> context;
  std::vector<std::unique_ptr<RecordExtension>> extensions;
  CaptureMeta meta;  // fields shared by every window
  uint64_t start_monotonic_ns = 0;
  uint64_t start_unix_ns = 0;
  uint64_t window_start_ns = 0;
  uint64_t window_end_ns = UINT64_MAX;  // SetWindowEnd: drains stop there
  uint64_t next_drain = 0;
  uint64_t next_liveness = 0;
  uint64_t drain_ns = 100'000'000;
  uint64_t frequency_hz = 0;  // -F after the kernel's limit
  SamplerCounters reported;  // sampler counters at the previous window
  // The session's own CPU time (this thread's) since the previous window, by
  // phase, logged with -v at each window close: where a daemon's CPU goes.
  struct CpuPhases {
    uint64_t wakeups = 0;       // Tick calls (returns from the side-band poll)
    uint64_t drains = 0;        // drain ticks
    uint64_t tick_ns = 0;       // everything in Tick but the poll's wait
    uint64_t sideband_ns = 0;   // reading and applying side-band records
    uint64_t samples_ns = 0;    // draining and processing samples
    std::vector<uint64_t> extension_ns;  // Poll of each extension
  } cpu;
  // Value sources (loader/value_source.h) add what they summed in BPF to
  // the open window: before a window is taken, before threads fold.
  void FlushSources(bool closing) {
    for (auto& ext : extensions) {
      if (auto* source = dynamic_cast<ValueSource*>(ext.get())) source->Flush(*context, closing);
    }
  }
  void DetachSources() {
    for (auto& ext : extensions) {
      if (auto* source = dynamic_cast<ValueSource*>(ext.get())) source->Detach();
    }
  }
  // A one-shot record under thread churn (RecordOptions::max_thread_records):
  // once a second, when the open window holds more thread records than the
  // budget (and half a budget more than after the last fold), the oldest
  // records of exited threads are folded until half the budget is left:
  // threads of a live process into its "[exited threads]" record, records of
  // an exited process into the record of its name under "[exited processes]"
  // (at most kFoldNames names; later ones share "[other processes]").
  static constexpr uint32_t kFoldedPid = model::kExitedProcessesPid;
  static constexpr uint32_t kFoldedTid = 0xffffffffu;
  static constexpr size_t kFoldNames = 1024;
  uint64_t next_fold_check = 0;
  size_t fold_above = 0;
  std::unordered_map<std::string, uint32_t> fold_names;  // process name -> tid under kFoldedPid
  std::unordered_set<uint32_t> fold_tids;                // the tids fold_names gave
  uint64_t threads_folded = 0;
  // The record of an exited process's name under "[exited processes]".
  ThreadRecord FoldedByName(const std::string& name) {
    ThreadRecord g;
    g.pid = kFoldedPid;
    g.process_comm = "[exited processes]";
    auto it = fold_names.find(name);
    if (it == fold_names.end() && fold_names.size() < kFoldNames) {
      // The name's tid in every recording, so that merged recordings sum
      // one name's record (model::ExitedProcessesTid); another name of this
      // recording with the same one gets the next.
      uint32_t tid = model::ExitedProcessesTid(name);
      while (!fold_tids.insert(tid).second) tid = model::NextExitedProcessesTid(tid);
      it = fold_names.emplace(name, tid).first;
    }
    g.tid = it != fold_names.end() ? it->second : 0;
    g.comm = it != fold_names.end() ? name : "[other processes]";
    return g;
  }
  void FoldExitedThreads(uint64_t now) {
    const size_t budget = options.max_thread_records;
    if (budget == 0 || now < next_fold_check) return;
    next_fold_check = now + 1'000'000'000;
    const size_t records = processor->window().threads.size();
    if (records <= std::max(budget, fold_above)) return;
    // Value sources' values so far (off-CPU time) go to the threads' records
    // before they fold (and the keys of threads gone since the last read
    // leave): later time of a folded thread would make its record again.
    FlushSources(false);
    // A process the symbolizer still remembers exited at most its retention
    // ago (10 s): its threads fold into its own "[exited threads]" (the
    // leader's record stays), so a command that just ended keeps its name
    // and pid. One it forgot, or never knew, that is gone folds by name.
    enum class Exit { kAlive, kRecent, kLongAgo };
    std::unordered_map<uint32_t, Exit> exits;  // by pid, asked once a pass
    auto exit_of = [&](uint32_t pid) {
      auto [it, inserted] = exits.try_emplace(pid, Exit::kAlive);
      if (inserted) {
        if (spaces.KnowsProcess(pid)) {
          it->second = spaces.ProcessExited(pid) ? Exit::kRecent : Exit::kAlive;
        } else if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
          it->second = Exit::kLongAgo;
        }
      }
      return it->second;
    };
    auto process_name = [&](const ThreadRecord& t) -> std::string {
      if (!t.process_comm.empty()) return t.process_comm;
      if (const ProcessInfo* p = spaces.Process(t.pid); p != nullptr && !p->comm.empty()) return p->comm;
      return t.comm;
    };
    size_t to_fold = records - budget / 2;
    const size_t folded = processor->FoldThreads([&](const ThreadRecord& t) -> std::optional<ThreadRecord> {
      if (to_fold == 0 || t.pid == 0 || t.pid == kFoldedPid) return std::nullopt;
      const Exit exit = exit_of(t.pid);
      if (exit != Exit::kLongAgo) {
        if (t.tid == kFoldedTid || t.tid == t.pid) return std::nullopt;
        if (exit == Exit::kAlive && (syscall(SYS_tgkill, t.pid, t.tid, 0) == 0 || errno != ESRCH)) {
          return std::nullopt;
        }
      }
      --to_fold;
      ThreadRecord g;
      const std::string name = process_name(t);
      if (exit != Exit::kLongAgo) {
        g.pid = t.pid;
        g.tid = kFoldedTid;
        g.comm = "[exited threads]";
        g.process_comm = name;
        g.cmdline = t.cmdline;
        g.identity = t.identity;
        g.process_start_ns = t.process_start_ns;  // its process's, not another's that held the pid
        return g;
      }
      return FoldedByName(name);
    });
    threads_folded += folded;
    fold_above = processor->window().threads.size() + budget / 2;
    spdlog::debug("{} thread records: {} of exited threads folded, {} left", records, folded,
                  processor->window().threads.size());
  }

  // Samples of JVMs being attached at the start (RecordContext::held_pids).
  std::vector<std::vector<uint8_t>> held;
  size_t held_bytes = 0;
  uint64_t ring_bytes = 0;  // the sample ring in use, mapped twice
  uint32_t ring_grows = 0;
  bool sampler_filters = false;  // a pid or cgroup filter in BPF
  SamplerCounters final_counters;
  uint64_t unprocessed = 0;  // left in the ring when the final drain ran out of time
  uint64_t reported_sideband_lost = 0;
  uint64_t final_sideband_lost = 0;
  // What every holder of memory uses against its budget, with -v: at each
  // window close, and every kHolderLogNs in between (a one-shot record is
  // one window: its log shows what grows over a long run).
  void LogHolders(const char* when) {
    // What the symbolizer and the unwinder hold, against their budgets.
    const SymbolizerStats& st = symbolizer.stats();
    const UnwinderStats& us = unwinder->stats();
    spdlog::debug(
        "{}: {} processes, {} open files, symbol tables {} KiB ({} released), CFI {} KiB "
        "({} rows computed, {} files released), {} libdwfl spaces made, {} unwinds ({} by cached rules), "
        "names {} KiB, window {} KiB ({} threads, {} frames), {} of {} user lookups answered from the cache", when,
        st.processes, st.open_files, st.symbol_bytes >> 10, st.symbol_tables_released, us.cfi_bytes >> 10,
        us.rules_computed, us.cfi_released, us.dwfl_created, us.unwinds, us.fast_unwinds, st.name_bytes >> 10, processor->WindowBytes() >> 10,
        processor->window().threads.size(), processor->window().frames.size(), st.cache_hits, st.lookups);
    // Every holder of a long session in one line (docs/design.md, "Memory
    // and files over a long session"): the soak's log shows what grows.
    const SymbolizerHeld h = symbolizer.Held();
    size_t extension_bytes = 0;
    std::string per_extension;
    for (const auto& ext : extensions) {
      const size_t b = ext->HeldBytes();
      extension_bytes += b;
      per_extension += fmt::format(", {} {}", ext->name(), b >> 10);
    }
    const size_t window = processor->WindowBytes();
    const size_t fixed = unwinder->CacheBytes() + processor->CacheBytes();
    const size_t total = h.total() + us.cfi_bytes + window + extension_bytes + fixed;
    spdlog::debug(
        "{}: held (KiB): symbols {}, CFI {}, kernel symbols {}, answer cache {}, names {}, "
        "processes {} ({} remembered, {} exited), JIT {} ({} sources), window {}{}, rule and stack caches {}; "
        "total {} KiB "
        "(the {} KiB sample ring, grown {} times, is mapped besides, twice)", when,
        h.symbol_bytes >> 10, us.cfi_bytes >> 10, h.kernel_bytes >> 10, h.answer_cache_bytes >> 10,
        h.name_bytes >> 10, h.process_bytes >> 10, h.processes, h.exited_processes, h.jit_bytes >> 10,
        h.jit_sources, window >> 10, per_extension, fixed >> 10, total >> 10,
        (sampler ? sampler->ring_bytes() : ring_bytes) >> 10, sampler ? sampler->ring_grows() : ring_grows);
    // What the heap itself says: bytes in use, free bytes it keeps
    // (fragmentation), and large blocks mapped on their own (glibc). The gap
    // between "in use" and the estimate above is what no holder counts.
    const heap::Stats hs = heap::Read();
    spdlog::debug("{}: heap (KiB, {}): in use {} (of which mapped on their own {}), free kept {}, from the kernel {}",
                  when, heap::IsJemalloc() ? "jemalloc" : "glibc", hs.in_use >> 10, hs.mapped_big >> 10,
                  hs.kept_free >> 10, hs.heap >> 10);
  }
  static constexpr uint64_t kHolderLogNs = 90'000'000'000;
  uint64_t next_holder_log = 0;
  bool stopped = false;

  ~State() {
    // Detach before anything the callbacks use goes away. A command that never
    // started is killed by its destructor.
    sampler.reset();
    extensions.clear();
  }

  // Bounded: at a sample rate above what we process, the ring fills and the
  // kernel counts lost samples, but the caller (and its signal checks) goes on.
  void Drain(uint64_t horizon, uint64_t budget_end) {
    const uint64_t t0 = PhaseCpuNs();
    sampler->DrainSideband();
    FollowAllAfterLoss();
    sideband.ApplyTo(spaces);
    ForgetExitedTargets();
    const uint64_t t1 = PhaseCpuNs();
    sampler->DrainSamples(horizon, budget_end);
    cpu.sideband_ns += t1 - t0;
    cpu.samples_ns += PhaseCpuNs() - t1;
  }

  // Lost side-band records may hide a fork of a followed process: from then
  // on every process's events are applied.
  // The followed set is then taken again from the BPF filter's map, which
  // follows forks by itself and loses nothing.
  uint64_t sideband_lost_seen = 0;
  void FollowAllAfterLoss() {
    if (!sampler->options().filter_pids) return;
    if (const uint64_t lost = sampler->sideband_lost(); lost != sideband_lost_seen) {
      sideband_lost_seen = lost;
      sideband.Follow(sampler->TargetPids());
      spdlog::debug("side band lost records: following the BPF filter's processes again");
    }
  }
  // Followed processes that exited leave the BPF filter.
  void ForgetExitedTargets() {
    for (uint32_t pid : sideband.TakeExited()) sampler->RemoveTargetPid(pid);
  }

  // The cgroup filter (--container, --cgroup, --service): the hierarchy is
  // walked again every second, so cgroups that appear later (a container
  // started after the recording) join the filter, and removed ones leave it.
  std::string cgroup_root;                            // the v2 mount point
  std::unordered_map<uint64_t, std::string> cgroups;  // id -> path, in the filter
  uint64_t next_cgroup_scan = 0;
  Result<void> ScanCgroups(uint64_t now) {
    if (cgroup_root.empty() || now < next_cgroup_scan) return {};
    next_cgroup_scan = now + 1'000'000'000;
    size_t scanned = 0;
    std::unordered_map<uint64_t, std::string> found;
    for (SelectedCgroup& c : FindSelectedCgroups(cgroup_root, options.cgroups, &scanned)) {
      if (!cgroups.count(c.id)) {
        if (auto ok = sampler->AddTargetCgroup(c.id, c.level); !ok) return ok.error();
        spdlog::debug("cgroup filter: + {} (id {}, level {})", c.path, c.id, c.level);
      }
      found.emplace(c.id, std::move(c.path));
    }
    for (const auto& [id, path] : cgroups) {
      if (!found.count(id)) {
        sampler->RemoveTargetCgroup(id);
        spdlog::debug("cgroup filter: - {} (gone)", path);
      }
    }
    cgroups = std::move(found);
    return {};
  }

  // After Detach(): what was sampled, within kFinalDrainNs and until another
  // stop signal; the rest is counted and dropped.
  void FinalDrain() {
    const int signals = StopSignals::stop_count();
    sampler->DrainSideband();
    sideband.ApplyTo(spaces);
    const uint64_t end = MonotonicNs() + kFinalDrainNs;
    while (!sampler->DrainSamples(UINT64_MAX, std::min(end, MonotonicNs() + drain_ns))) {
      if (MonotonicNs() >= end || StopSignals::stop_count() != signals) {
        unprocessed += sampler->DiscardSamples();
        break;
      }
    }
  }
};

RecordingSession::RecordingSession(std::unique_ptr<State> state) : s_(std::move(state)) {}
RecordingSession::~RecordingSession() = default;

LaunchedCommand* RecordingSession::command() { return s_->command ? &*s_->command : nullptr; }
uint64_t RecordingSession::samples() const { return s_->processor->samples(); }
uint64_t RecordingSession::start_monotonic_ns() const { return s_->start_monotonic_ns; }
uint64_t RecordingSession::lost_samples() const {
  return s_->sampler ? s_->sampler->ReadCounters().lost_ringbuf : s_->final_counters.lost_ringbuf;
}
uint64_t RecordingSession::frequency_hz() const { return s_->frequency_hz; }
uint64_t RecordingSession::unprocessed_samples() const { return s_->unprocessed; }
uint64_t RecordingSession::lost_sideband_records() const {
  return s_->sampler ? s_->sampler->sideband_lost() : s_->final_sideband_lost;
}

// The largest sample ring, when --buffer-mb is not given: half a second of
// worst-case records (every sample with a full stack copy) on every CPU,
// rounded up to a power of two, from 8 to 64 MiB. A loaded machine starves
// the drain: record's 999 Hz keeps 64 MiB, continuous's 49 Hz on 2 CPUs gets
// 8 MiB (4 MiB lost 2.1-2.3% of the samples under the churn soak at load 12-24;
// 8 MiB none in a 150 s run of it). The pages count twice in RSS from the
// start (they are mapped twice), so the ring starts at kFirstRingBytes and
// grows to this only while records fill it.
static uint32_t AutoBufferMb(uint64_t frequency_hz, uint32_t unwind_mode, uint64_t stack_bytes) {
  if (frequency_hz == 0) return 64;  // -c: the rate is not known
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const uint64_t copy = unwind_mode == ARCPROF_UNWIND_FP ? ARCPROF_FP_STACK_COPY : stack_bytes;
  const uint64_t record = copy + ARCPROF_MAX_STACK * 2 * sizeof(uint64_t) + 256;
  const uint64_t wanted = frequency_hz * static_cast<uint64_t>(cpus) * record / 2;
  uint32_t mb = 8;
  while (mb < 64 && (static_cast<uint64_t>(mb) << 20) < wanted) mb <<= 1;
  return mb;
}

// The drain interval when drain_interval_ms is 0: a quarter of the time the
// ring holds when every sample copies the whole stack, from 100 ms to 1 s.
// The ring is drained on a timer only (records are submitted without wakeup).
static uint32_t AutoDrainMs(uint64_t frequency_hz, uint32_t unwind_mode, uint64_t stack_bytes, uint32_t buffer_mb) {
  if (frequency_hz == 0) return 100;
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const uint64_t copy = unwind_mode == ARCPROF_UNWIND_FP ? ARCPROF_FP_STACK_COPY : stack_bytes;
  const uint64_t record = copy + ARCPROF_MAX_STACK * 2 * sizeof(uint64_t) + 256;
  const uint64_t bytes_per_s = frequency_hz * static_cast<uint64_t>(cpus) * record;
  const uint64_t ms = (static_cast<uint64_t>(buffer_mb) << 20) * 1000 / 4 / std::max<uint64_t>(1, bytes_per_s);
  return static_cast<uint32_t>(std::clamp<uint64_t>(ms, 100, 1000));
}

// The symbolizer holds one descriptor per mapped file (device, inode) that a
// remembered process maps: a busy machine needs more than the usual 1024.
// Root may raise the hard limit too; a limit that stays low is said once.
static void RaiseOpenFileLimit() {
  constexpr rlim_t kWanted = 65536;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur >= kWanted) return;
  rlimit raised = limit;
  raised.rlim_cur = kWanted;
  if (raised.rlim_max < kWanted) raised.rlim_max = kWanted;
  if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
    raised.rlim_max = limit.rlim_max;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0) raised = limit;
  }
  spdlog::debug("open file limit {} -> {}", static_cast<unsigned long long>(limit.rlim_cur),
                static_cast<unsigned long long>(raised.rlim_cur));
  if (raised.rlim_cur < 4096) {
    fprintf(stderr,
            "arcprof: the open file limit is %llu and cannot be raised: on a busy machine the files "
            "of some processes will not be opened and their frames stay unknown\n",
            static_cast<unsigned long long>(raised.rlim_cur));
  }
}

Result<std::unique_ptr<RecordingSession>> RecordingSession::Start(const RecordOptions& opt) {
  if (auto ok = CheckRecordPreconditions(); !ok) return ok.error();
  RaiseOpenFileLimit();
  auto event = ParseEvent(opt.event);
  if (!event) return event.error();
  if (opt.frequency_hz == 0) return MakeError("-F must be at least 1 Hz");
  if (!std::isfinite(opt.duration_s) || opt.duration_s < 0 || opt.duration_s > kMaxDurationS) {
    return MakeError("-d must be a number of seconds from 0 to " +
                     std::to_string(static_cast<long long>(kMaxDurationS)));
  }
  auto state = std::make_unique<State>(opt);
  State& s = *state;
  uint64_t frequency_hz = opt.frequency_hz;
  if (opt.sample_period == 0) {
    // The kernel refuses rates above this sysctl (and lowers it by itself when
    // sampling interrupts take too long): sample at the highest it allows.
    const uint64_t max_rate = MaxSampleRate();
    if (max_rate > 0 && frequency_hz > max_rate) {
      fprintf(stderr,
              "arcprof: -F %llu is above kernel.perf_event_max_sample_rate (%llu): sampling at "
              "%llu Hz\n",
              static_cast<unsigned long long>(frequency_hz),
              static_cast<unsigned long long>(max_rate), static_cast<unsigned long long>(max_rate));
      frequency_hz = max_rate;
    }
  }
  s.frequency_hz = frequency_hz;
  s.event = *event;
  uint32_t unwind_mode;
  if (opt.call_graph == "fp") {
    s.mode = CallGraphMode::kFramePointer;
    unwind_mode = ARCPROF_UNWIND_FP;
  } else if (opt.call_graph == "dwarf") {
    s.mode = CallGraphMode::kDwarf;
    unwind_mode = ARCPROF_UNWIND_DWARF;
  } else if (opt.call_graph == "hybrid") {
    s.mode = CallGraphMode::kHybrid;
    unwind_mode = ARCPROF_UNWIND_HYBRID;
  } else {
    return MakeError("--call-graph must be fp, dwarf or hybrid, not '" + opt.call_graph + "'");
  }
  const uint32_t stack_kb = opt.stack_kb.value_or(kDefaultStackKb);
  if (stack_kb == 0 || stack_kb * 1024ull > ARCPROF_MAX_STACK_COPY) {
    return MakeError("--stack-kb must be between 1 and " +
                     std::to_string(ARCPROF_MAX_STACK_COPY / 1024));
  }
  for (uint32_t pid : opt.pids) {
    if (pid == 0) {
      return MakeError("-p 0: pid 0 is the kernel's idle task, not a process; record without -p "
                       "to profile the whole machine");
    }
    if (!ProcessAlive(pid)) return MakeError("no such process: " + std::to_string(pid));
  }

  if (!opt.command.empty()) {
    auto launched = LaunchedCommand::Fork(opt.command);
    if (!launched) return launched.error();
    s.command.emplace(std::move(*launched));
  }

  SamplerOptions sopt;
  sopt.event = s.event;
  sopt.frequency_hz = frequency_hz;
  sopt.period = opt.sample_period;
  sopt.buffer_mb = opt.buffer_mb != 0
                      ? opt.buffer_mb
                      : AutoBufferMb(opt.sample_period == 0 ? frequency_hz : 0, unwind_mode,
                                     stack_kb * 1024);
  sopt.filter_pids = s.command.has_value() || !opt.pids.empty();
  // Following some processes, unless --buffer-mb is given, the ring starts
  // small and grows while it fills (Sampler::GrowRing) up to the size above.
  // The whole machine is busy from the first moment: its ring starts whole.
  // --alloc's records come in bursts from the start (a realloc chain samples
  // every call): its ring starts whole too.
  sopt.ring_start_bytes = opt.buffer_mb == 0 && sopt.filter_pids && !opt.alloc ? kFirstRingBytes : 0;
  sopt.filter_cgroups = !opt.cgroups.empty();
  if (sopt.filter_cgroups) {
    if (auto ok = CheckCgroupSelection(opt.cgroups); !ok) return ok.error();
    auto mountinfo = ReadWholeFile("/proc/self/mountinfo");
    if (mountinfo.ok()) s.cgroup_root = Cgroup2MountPoint(*mountinfo);
    if (s.cgroup_root.empty()) {
      return MakeError(opt.cgroups.Describe() +
                       ": needs the cgroup v2 hierarchy (mounted at /sys/fs/cgroup, or /sys/fs/cgroup/unified "
                       "on a hybrid machine); none is mounted");
    }
  }
  sopt.self_pid = static_cast<uint32_t>(getpid());
  sopt.unwind_mode = unwind_mode;
  sopt.stack_copy_bytes = stack_kb * 1024;
  sopt.copy_deep_stacks = !opt.stack_kb.has_value() && unwind_mode != ARCPROF_UNWIND_FP;
  s.sampler_filters = sopt.filter_pids || sopt.filter_cgroups;
  auto loaded = Sampler::Load(sopt);
  if (!loaded) return loaded.error();
  s.sampler = std::move(*loaded);
  for (uint32_t pid : opt.pids) {
    if (auto ok = s.sampler->AddTargetPid(pid); !ok) return ok.error();
  }
  if (s.command) {
    if (auto ok = s.sampler->AddTargetPid(static_cast<uint32_t>(s.command->pid())); !ok) {
      return ok.error();
    }
  }

  if (sopt.filter_cgroups) {
    if (auto ok = s.ScanCgroups(0); !ok) return ok.error();
    if (s.cgroups.empty()) {
      spdlog::warn("no cgroup under {} matches {} yet; recording what appears", s.cgroup_root,
                   opt.cgroups.Describe());
    }
  }
  // A session of some processes symbolizes only them and their children.
  if (sopt.filter_pids && !sopt.filter_cgroups) {
    std::vector<uint32_t> followed = opt.pids;
    if (s.command) followed.push_back(static_cast<uint32_t>(s.command->pid()));
    s.sideband.Follow(followed);
  }
  s.unwinder = opt.cfi_budget_bytes != 0 ? std::make_unique<Unwinder>(s.spaces, s.symbolizer, opt.cfi_budget_bytes)
                                         : std::make_unique<Unwinder>(s.spaces, s.symbolizer);
  s.unwinder->SetFrameSteppers(runtimes::MakeFrameSteppers());
  s.processor = std::make_unique<SampleProcessor>(s.symbolizer, s.mode, s.unwinder.get());
  // A pid reused by a new process: the earlier one's records fold by its
  // name (its pid now names the new one); never by spaces.Process(), which
  // already describes the new one.
  s.processor->SetRetire([&s](const ThreadRecord& t) {
    return s.FoldedByName(!t.process_comm.empty() ? t.process_comm : t.comm);
  });
  if (auto ok = s.sampler->OpenSideband([&s](const perf_event_header* h) {
        s.sideband.PushRecord(h, h->size);
      });
      !ok) {
    return ok.error();
  }

  s.start_unix_ns = RealtimeNs();
  s.start_monotonic_ns = MonotonicNs();
  s.window_start_ns = s.start_monotonic_ns;
  // Side-band events are already flowing: the snapshot covers what ran before.
  if (s.command) {
    // The command has not exec'd yet; its exec and mmaps arrive as events.
  } else if (!opt.pids.empty()) {
    for (uint32_t pid : opt.pids) s.spaces.SnapshotProcess(pid, s.start_monotonic_ns);
  } else {
    s.spaces.SnapshotAllProcesses(s.start_monotonic_ns);
  }

  s.context.reset(new RecordContext{s.symbolizer, s.start_monotonic_ns, !s.command && opt.pids.empty(),
                                    opt.pids, {}, {}});
  if (s.command) s.context->target_pids.push_back(static_cast<uint32_t>(s.command->pid()));
  s.context->sampler = s.sampler.get();
  s.context->processor = s.processor.get();
  s.context->sink = s.processor.get();
  const uint32_t drain_ms =
      opt.drain_interval_ms != 0
          ? opt.drain_interval_ms
          : AutoDrainMs(opt.sample_period == 0 ? frequency_hz : 0, unwind_mode, stack_kb * 1024ull, sopt.buffer_mb);
  s.drain_ns = static_cast<uint64_t>(drain_ms) * 1000000ull;
  spdlog::debug("sample ring {} KiB, up to {} MiB, drained every {} ms", s.sampler->ring_bytes() >> 10,
                sopt.buffer_mb, drain_ms);
  s.context->drain = [&s] {
    const uint64_t now = MonotonicNs();
    s.Drain(now, now + s.drain_ns);
  };
  // Extensions load their BPF objects before sampling starts, so that the
  // load's time is not spent sampling before "recording" is said; they start
  // once sampling works: a failure to attach the sampler (no PMU for
  // -e cycles, ...) then stays the only message.
  s.extensions = MakeRecordExtensions(s.options);
  for (auto& ext : s.extensions) {
    if (auto ok = ext->Load(*s.context); !ok) return ok.error();
  }
  if (auto ok = s.sampler->Attach([&s](const void* data, size_t size) {
        if (!s.context->held_pids.empty() && size >= sizeof(sample_event) &&
            s.held_bytes + size <= kMaxHeldBytes) {
          sample_event e;
          memcpy(&e, data, sizeof(e));
          if (s.context->held_pids.count(e.pid)) {
            const auto* bytes = static_cast<const uint8_t*>(data);
            s.held.emplace_back(bytes, bytes + size);
            s.held_bytes += size;
            return;
          }
        }
        s.processor->Process(data, size);
      });
      !ok) {
    return ok.error();
  }
  for (auto& ext : s.extensions) {
    if (auto ok = ext->Start(*s.context); !ok) return ok.error();
  }
  // Loading the programs parsed the kernel's BTF once per object: megabytes
  // freed by now, which a heap that keeps free pages a while would hold.
  heap::ReleaseFree();
  // Samples held while JVMs were being attached, now that their agents are in.
  s.context->held_pids.clear();
  for (const std::vector<uint8_t>& record : s.held) s.processor->Process(record.data(), record.size());
  s.held.clear();
  s.held.shrink_to_fit();
  s.held_bytes = 0;
  if (s.command) {
    if (auto ok = s.command->Start(); !ok) return ok.error();
  }

  utsname uts{};
  uname(&uts);
  s.meta.host = uts.nodename;
  s.meta.kernel = uts.release;
  s.meta.event = s.event.name;
  // With -c the rate is known only for time-based events (periods in ns).
  s.meta.frequency_hz =
      opt.sample_period == 0 ? frequency_hz
      : (s.event.name == "cpu-clock" || s.event.name == "task-clock")
          ? std::max<uint64_t>(1, 1000000000ull / opt.sample_period)
          : 0;
  s.meta.command_line = opt.command_line;
  s.meta.target = DescribeTarget(opt);
  s.meta.call_graph = opt.call_graph;
  s.meta.arcprof_version = ARCPROF_VERSION;

  const uint64_t now = MonotonicNs();
  s.next_drain = now + s.drain_ns;
  s.next_liveness = now + kLivenessCheckNs;
  return std::unique_ptr<RecordingSession>(new RecordingSession(std::move(state)));
}

std::optional<std::string> RecordingSession::Tick(uint64_t wake_ns) {
  State& s = *s_;
  uint64_t now = MonotonicNs();
  const uint64_t wake = std::min(s.next_drain, wake_ns);
  const int timeout_ms = wake > now ? static_cast<int>((wake - now + 999999) / 1000000) : 0;
  const bool ring_filling = s.sampler->Poll(timeout_ms);
  const uint64_t cpu0 = PhaseCpuNs();
  ++s.cpu.wakeups;
  s.FollowAllAfterLoss();
  s.sideband.ApplyTo(s.spaces);
  s.ForgetExitedTargets();
  s.cpu.sideband_ns += PhaseCpuNs() - cpu0;
  now = MonotonicNs();
  if (now >= s.next_drain || ring_filling) {
    ++s.cpu.drains;
    // Samples up to `now` only: their processes' events are all read by then.
    // Never past the end of the open window: later samples wait for the next.
    s.Drain(std::min(now, s.window_end_ns), now + 2 * s.drain_ns);
    s.FoldExitedThreads(now);
    if (auto ok = s.ScanCgroups(now); !ok) spdlog::warn("{}", ok.error().message);
    s.cpu.extension_ns.resize(s.extensions.size());
    for (size_t i = 0; i < s.extensions.size(); ++i) {
      const uint64_t t = PhaseCpuNs();
      s.extensions[i]->Poll(*s.context);
      s.cpu.extension_ns[i] += PhaseCpuNs() - t;
    }
    s.next_drain = MonotonicNs() + s.drain_ns;
  }
  s.cpu.tick_ns += PhaseCpuNs() - cpu0;
  if (spdlog::should_log(spdlog::level::debug)) {
    if (s.next_holder_log == 0) s.next_holder_log = now + State::kHolderLogNs;
    if (now >= s.next_holder_log) {
      s.next_holder_log = now + State::kHolderLogNs;
      s.LogHolders("in the window");
    }
  }
  if (s.command && s.command->Exited()) return std::string();
  if (!s.options.pids.empty() && now >= s.next_liveness) {
    s.next_liveness = now + kLivenessCheckNs;
    bool any = false;
    for (uint32_t pid : s.options.pids) any = any || ProcessAlive(pid);
    if (!any) return std::string("all target processes exited");
  }
  return std::nullopt;
}

Result<Profile> RecordingSession::CloseWindow(uint64_t end_ns) {
  const uint64_t now = MonotonicNs();
  s_->window_end_ns = UINT64_MAX;
  return Close(false, end_ns != 0 && end_ns <= now && end_ns >= s_->window_start_ns ? end_ns : now);
}

void RecordingSession::SetWindowEnd(uint64_t end_ns) { s_->window_end_ns = end_ns; }

size_t RecordingSession::WindowBytes() const { return s_->processor->WindowBytes(); }

Result<Profile> RecordingSession::Stop() {
  s_->window_end_ns = UINT64_MAX;
  return Close(true, MonotonicNs());
}

Result<Profile> RecordingSession::Close(bool last, uint64_t end) {
  State& s = *s_;
  if (s.stopped) return MakeError("the recording session has stopped");
  const uint64_t cpu_start = PhaseCpuNs();
  SamplerCounters counters;
  uint64_t sideband_lost;
  if (last) {
    // Stop sampling first, so that the last drain has an end.
    s.sampler->Detach();
    s.DetachSources();
    s.FinalDrain();
    counters = s.sampler->ReadCounters();
    sideband_lost = s.sampler->sideband_lost();
    s.context->window_end_ns = 0;  // the last window: every record drained is its own
    s.FlushSources(true);  // every source's stack record is processed by now
    s.ring_bytes = s.sampler->ring_bytes();
    s.ring_grows = s.sampler->ring_grows();
    s.sampler.reset();  // detach everything before the (slower) window close
    // The window's close and the capture's write come next, the peak of a
    // short recording: free pages the heap kept from start-up go back first.
    heap::ReleaseFree();
    s.stopped = true;
    s.final_counters = counters;
    s.final_sideband_lost = sideband_lost;
  } else {
    s.Drain(end, MonotonicNs() + kFinalDrainNs);
    // Exits the side band lost: the filter map must not fill up over days.
    if (s.sampler->options().filter_pids) {
      for (uint32_t pid : s.sampler->TargetPids()) {
        if (!ProcessAlive(pid)) s.sampler->RemoveTargetPid(pid);
      }
    }
    counters = s.sampler->ReadCounters();
    sideband_lost = s.sampler->sideband_lost();
    s.context->window_end_ns = end;
    s.FlushSources(true);
    s.ring_bytes = s.sampler->ring_bytes();
    s.ring_grows = s.sampler->ring_grows();
  }

  if (spdlog::should_log(spdlog::level::debug)) {
    s.LogHolders("window close");
    s.next_holder_log = MonotonicNs() + State::kHolderLogNs;
  }
  const uint64_t cpu_drained = PhaseCpuNs();
  Profile window = s.processor->TakeWindow();
  s.unwinder->ReleaseIdleSpaces();
  // The processor holds no name of the pool now (TakeWindow cleared its
  // frame index; the window's frames are copies).
  if (s.options.names_budget_bytes != 0) {
    if (const size_t n = s.symbolizer.ReleaseNames(s.options.names_budget_bytes)) {
      spdlog::debug("window close: {} interned names released (over {} KiB)", n, s.options.names_budget_bytes >> 10);
    }
  }
  const uint64_t cpu_taken = PhaseCpuNs();
  window.meta = s.meta;
  window.meta.start_monotonic_ns = s.window_start_ns;
  window.meta.end_monotonic_ns = end;
  window.meta.start_unix_ns = s.start_unix_ns + (s.window_start_ns - s.start_monotonic_ns);
  s.window_start_ns = end;
  // Build ids of the modules this window's frames name.
  const std::map<std::string, std::string> build_ids = s.spaces.ModuleBuildIds();
  for (uint32_t m = 1; m < window.frames.module_count(); ++m) {
    const std::string& module = window.frames.module(m);
    if (window.build_ids.count(module)) continue;
    if (auto it = build_ids.find(module); it != build_ids.end()) window.build_ids.emplace(*it);
  }
  if (s.debuginfod) {
    // Stripped frames named from what debuginfod has found so far; the last
    // window waits for the rest of the budget (sampling has stopped then).
    const DebuginfodNaming named = NameFramesFromDebuginfod(window, *s.debuginfod, last);
    if (last) {
      window.counters["debuginfod.modules_named"] = static_cast<int64_t>(named.modules_named);
      window.counters["debuginfod.modules_not_found"] =
          static_cast<int64_t>(named.modules_not_found);
    }
  }
  const uint64_t cpu_named = PhaseCpuNs();
  std::string extension_cpu;
  for (auto& ext : s.extensions) {
    const uint64_t t = PhaseCpuNs();
    if (auto ok = ext->CloseWindow(*s.context, window, last); !ok) return ok.error();
    extension_cpu += fmt::format(", {} {:.1f}", ext->name(), (PhaseCpuNs() - t) / 1e6);
  }
  if (spdlog::should_log(spdlog::level::debug)) {
    const State::CpuPhases& c = s.cpu;
    std::string polls;
    for (size_t i = 0; i < s.extensions.size() && i < c.extension_ns.size(); ++i) {
      polls += fmt::format(", {} polls {:.1f}", s.extensions[i]->name(), c.extension_ns[i] / 1e6);
    }
    spdlog::debug(
        "window CPU (ms): ticks {:.1f} ({} wakeups, {} drains): side band {:.1f}, samples {:.1f} ({} samples, "
        "{:.0f} us each){}; close: drain {:.1f}, take window {:.1f}, build ids {:.1f}{}",
        c.tick_ns / 1e6, c.wakeups, c.drains, c.sideband_ns / 1e6, c.samples_ns / 1e6,
        window.counters.count("samples_total") ? window.counters.at("samples_total") : 0,
        window.counters.count("samples_total") && window.counters.at("samples_total") > 0
            ? c.samples_ns / 1e3 / static_cast<double>(window.counters.at("samples_total"))
            : 0.0,
        polls, (cpu_drained - cpu_start) / 1e6, (cpu_taken - cpu_drained) / 1e6, (cpu_named - cpu_taken) / 1e6,
        extension_cpu);
  }
  s.cpu = State::CpuPhases{};
  auto delta = [](uint64_t now_value, uint64_t& reported) {
    const uint64_t d = now_value >= reported ? now_value - reported : now_value;
    reported = now_value;
    return static_cast<int64_t>(d);
  };
  window.counters["lost_samples"] = delta(counters.lost_ringbuf, s.reported.lost_ringbuf);
  window.counters["sideband_lost_records"] = delta(sideband_lost, s.reported_sideband_lost);
  window.counters["bpf_samples"] = delta(counters.samples, s.reported.samples);
  if (s.sampler_filters) {
    // Samples the pid or cgroup filter left out in BPF (never taken).
    window.counters["filtered_samples"] = delta(counters.filtered, s.reported.filtered);
  }
  window.counters["followed_forks"] = delta(counters.followed_forks, s.reported.followed_forks);
  window.counters["stack_copy_faults"] = delta(counters.stack_faults, s.reported.stack_faults);
  if (last && s.unprocessed > 0) {
    window.counters["unprocessed_samples"] = static_cast<int64_t>(s.unprocessed);
  }
  if (s.threads_folded > 0) {
    window.counters["threads_folded"] = static_cast<int64_t>(s.threads_folded);
    s.threads_folded = 0;
  }
  if (last) s.extensions.clear();
  return window;
}

}  // namespace arcprof
