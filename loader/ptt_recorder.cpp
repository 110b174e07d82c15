#include "loader/ptt_recorder.h"
#include "common/clock.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <tuple>
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "loader/percpu_counters.h"
#include "spaces/process_registry.h"
#include "loader/perf_events.h"
#include "ptt.skel.h"
#include "model/ptt_data.h"

namespace arcprof {
using namespace arcprof::model;
namespace {

// A counting (not sampling) event on one CPU for all tasks: the BPF program
// reads it with bpf_perf_event_read_value at each context switch.
Result<ScopedFd> OpenCountingEvent(const EventSpec& event, int cpu) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = event.type;
  attr.config = event.config;
  const long fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (event.hardware && (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)) {
      return MakeError("not available on this machine");
    }
    return MakeError(std::string("cannot be counted: ") + strerror(err));
  }
  return ScopedFd(static_cast<int>(fd));
}

// The tracepoints this kernel has (tp_btf needs the btf_trace_<name> typedef).
bool KernelHasTracepoint(const btf* vmlinux, const char* name) {
  if (!vmlinux) return false;
  const std::string type = std::string("btf_trace_") + name;
  return btf__find_by_name_kind(vmlinux, type.c_str(), BTF_KIND_TYPEDEF) > 0;
}

// "irq 11 (virtio0-input.0)": the handler names are the subdirectories of /proc/irq/N.
std::string IrqName(uint32_t irq) {
  if (irq >= ARCPROF_PTT_MAX_IRQ) return "irq >=" + std::to_string(ARCPROF_PTT_MAX_IRQ);
  std::string name = "irq " + std::to_string(irq);
  DIR* dir = opendir(("/proc/irq/" + std::to_string(irq)).c_str());
  if (!dir) return name;
  std::vector<std::string> handlers;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_type == DT_DIR && entry->d_name[0] != '.') handlers.emplace_back(entry->d_name);
  }
  closedir(dir);
  std::sort(handlers.begin(), handlers.end());
  std::string joined;
  for (const std::string& h : handlers) joined += (joined.empty() ? "" : ",") + h;
  return joined.empty() ? name : name + " (" + joined + ")";
}

// The thread's name from /proc ("" once it has exited): the BPF side copies
// names only when it first sees a thread, so a thread still on its first
// dispatch at the end has none there.
std::string ProcComm(uint32_t pid, uint32_t tid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm";
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return "";
  char buffer[ARCPROF_PTT_COMM_LEN + 1] = {};
  const ssize_t n = read(fd.get(), buffer, ARCPROF_PTT_COMM_LEN);
  if (n <= 0) return "";
  std::string name(buffer, static_cast<size_t>(n));
  if (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

}  // namespace

void PttRecorder::SkeletonDeleter::operator()(::ptt* p) const { ptt__destroy(p); }
void PttRecorder::LinkDeleter::operator()(bpf_link* l) const { bpf_link__destroy(l); }

PttRecorder::~PttRecorder() {
  links_.clear();
  event_fds_.clear();
}

Result<std::vector<std::string>> ParsePttEvents(const std::string& list) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string name = list.substr(start, comma - start);
    start = comma + 1;
    if (name.empty()) continue;
    auto spec = ParseEvent(name);
    if (!spec) return MakeError("--ptt-events: " + spec.error().message);
    if (std::find(names.begin(), names.end(), spec->name) != names.end()) {
      return MakeError("--ptt-events names '" + spec->name + "' twice");
    }
    names.push_back(spec->name);
  }
  if (names.size() > kPttMaxEvents) {
    return MakeError("--ptt-events takes at most " + std::to_string(kPttMaxEvents) +
                         " counters (one per slot read at each context switch)");
  }
  return names;
}

Result<void> PttRecorder::OpenEvents(const PttRecorderOptions& options) {
  bpf_map* maps[kPttMaxEvents] = {skel_->maps.event0, skel_->maps.event1, skel_->maps.event2,
                                  skel_->maps.event3};
  int next_slot = 0;
  for (const std::string& name : options.events) {
    PttEvent event;
    event.name = name;
    available_slot_of_event_.push_back(-1);
    auto spec = ParseEvent(name);
    if (!spec) return spec.error();
    std::vector<ScopedFd> fds;
    std::string failure;
    for (int cpu : cpus_) {
      auto fd = OpenCountingEvent(*spec, cpu);
      if (!fd) {
        failure = fd.error().message;
        break;
      }
      fds.push_back(std::move(*fd));
    }
    if (!failure.empty()) {
      event.available = false;
      event.unavailable_reason = failure;
      events_.push_back(std::move(event));
      continue;
    }
    // Slots are compacted: the program reads nr_events maps from event0 on.
    bpf_map__set_max_entries(maps[next_slot], static_cast<uint32_t>(possible_cpus_));
    event.available = true;
    available_slot_of_event_.back() = next_slot++;
    events_.push_back(std::move(event));
    for (ScopedFd& fd : fds) event_fds_.push_back(std::move(fd));
  }
  skel_->rodata->nr_events = static_cast<uint32_t>(next_slot);
  return {};
}

Result<std::unique_ptr<PttRecorder>> PttRecorder::Start(const PttRecorderOptions& options) {
  std::unique_ptr<PttRecorder> r(new PttRecorder());
  auto cpus = OnlineCpus();
  if (!cpus) return cpus.error();
  r->cpus_ = *cpus;
  r->possible_cpus_ = libbpf_num_possible_cpus();
  if (r->possible_cpus_ <= 0) return MakeError("cannot count the possible CPUs");

  r->max_window_rows_ = options.max_window_rows;
  r->skel_.reset(ptt__open());
  if (!r->skel_) return MakeError(std::string("cannot open the PTT BPF object: ") + strerror(errno));
  bpf_map__set_max_entries(r->skel_->maps.threads, std::max<uint32_t>(options.max_threads, 1024));
  if (auto ok = r->OpenEvents(options); !ok) return ok.error();

  // x86 system vectors are optional: a kernel without a tracepoint loses that
  // source only.
  btf* vmlinux = btf__load_vmlinux_btf();
  const std::pair<bpf_program*, const char*> optional_programs[] = {
      {r->skel_->progs.ptt_local_timer_entry, "local_timer_entry"},
      {r->skel_->progs.ptt_local_timer_exit, "local_timer_entry"},
      {r->skel_->progs.ptt_reschedule_entry, "reschedule_entry"},
      {r->skel_->progs.ptt_reschedule_exit, "reschedule_entry"},
      {r->skel_->progs.ptt_call_function_entry, "call_function_entry"},
      {r->skel_->progs.ptt_call_function_exit, "call_function_entry"},
      {r->skel_->progs.ptt_call_function_single_entry, "call_function_single_entry"},
      {r->skel_->progs.ptt_call_function_single_exit, "call_function_single_entry"},
      {r->skel_->progs.ptt_irq_work_entry, "irq_work_entry"},
      {r->skel_->progs.ptt_irq_work_exit, "irq_work_entry"},
  };
  for (const auto& [program, tracepoint] : optional_programs) {
    if (!KernelHasTracepoint(vmlinux, tracepoint)) bpf_program__set_autoload(program, false);
  }
  btf__free(vmlinux);

  if (int err = ptt__load(r->skel_.get()); err != 0) {
    return MakeError("cannot load the PTT BPF programs: " + std::string(strerror(-err)) +
                     " (needs root or CAP_BPF+CAP_PERFMON and a kernel with BTF; or record "
                     "with --no-ptt)");
  }
  bpf_map* maps[kPttMaxEvents] = {r->skel_->maps.event0, r->skel_->maps.event1,
                                  r->skel_->maps.event2, r->skel_->maps.event3};
  size_t fd_index = 0;
  for (size_t e = 0; e < r->events_.size(); ++e) {
    const int slot = r->available_slot_of_event_[e];
    if (slot < 0) continue;
    for (int cpu : r->cpus_) {
      const int fd = r->event_fds_[fd_index++].get();
      const uint32_t key = static_cast<uint32_t>(cpu);
      if (bpf_map__update_elem(maps[slot], &key, sizeof(key), &fd, sizeof(fd), BPF_ANY) != 0) {
        return MakeError("cannot hand the " + r->events_[e].name + " counter of cpu " +
                         std::to_string(cpu) + " to BPF: " + strerror(errno));
      }
    }
  }
  if (auto ok = r->Attach(); !ok) return ok.error();
  if (auto ok = r->PrimeCpus(); !ok) return ok.error();

  r->last_snapshot_ns_ = MonotonicNs();
  const std::vector<ptt_cpu> states = r->ReadCpuStates();
  r->last_totals_.resize(states.size());
  for (size_t cpu = 0; cpu < states.size(); ++cpu) {
    r->last_totals_[cpu] = CpuTotalsAt(states[cpu], r->last_snapshot_ns_);
  }
  return r;
}

// Exits attach before entries: an interrupt that enters while only its entry
// program is attached would otherwise stay open (an exit without an entry is
// just counted and ignored). sched_switch comes last, once interrupts are seen.
Result<void> PttRecorder::Attach() {
  auto is_exit = [](bpf_program* p) {
    return std::string_view(bpf_program__name(p)).ends_with("_exit");
  };
  auto is_switch = [&](bpf_program* p) { return p == skel_->progs.ptt_switch; };
  for (int pass = 0; pass < 3; ++pass) {
    bpf_program* program = nullptr;
    bpf_object__for_each_program(program, skel_->obj) {
      if (!bpf_program__autoload(program)) continue;
      const int program_pass = is_exit(program) ? 0 : is_switch(program) ? 2 : 1;
      if (program_pass != pass) continue;
      bpf_link* link = bpf_program__attach(program);
      if (!link) {
        return MakeError(std::string("cannot attach ") + bpf_program__section_name(program) +
                         ": " + strerror(errno) +
                         " (record with --no-ptt to go without per-thread time)");
      }
      links_.emplace_back(link);
    }
  }
  return {};
}

// A CPU only learns which task runs on it at its first context switch; an idle
// CPU may go seconds without one. A short-lived thread pinned to each CPU
// forces a switch in and out.
Result<void> PttRecorder::PrimeCpus() {
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<std::thread> threads;
    for (int cpu : cpus_) {
      threads.emplace_back([cpu] {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
        usleep(1000);
      });
    }
    for (std::thread& t : threads) t.join();
    const std::vector<ptt_cpu> states = ReadCpuStates();
    bool all_known = true;
    for (int cpu : cpus_) {
      all_known = all_known && static_cast<size_t>(cpu) < states.size() &&
                  states[static_cast<size_t>(cpu)].curr_known;
    }
    if (all_known) return {};
  }
  return MakeError(
      "PTT saw no context switch on some CPU after attaching sched_switch; record with --no-ptt");
}

int PttRecorder::EventFd(int slot, int cpu) const {
  const auto at = std::find(cpus_.begin(), cpus_.end(), cpu) - cpus_.begin();
  return event_fds_[static_cast<size_t>(slot) * cpus_.size() + static_cast<size_t>(at)].get();
}

std::vector<ptt_cpu> PttRecorder::ReadCpuStates() const {
  std::vector<ptt_cpu> states(static_cast<size_t>(possible_cpus_));
  const uint32_t zero = 0;
  if (bpf_map__lookup_elem(skel_->maps.cpu_state, &zero, sizeof(zero), states.data(),
                           states.size() * sizeof(ptt_cpu), 0) != 0) {
    return std::vector<ptt_cpu>(static_cast<size_t>(possible_cpus_));
  }
  return states;
}

void PttRecorder::Snapshot() {
  const uint64_t now = MonotonicNs();
  const std::vector<ptt_cpu> states = ReadCpuStates();
  for (int cpu : cpus_) {
    const size_t i = static_cast<size_t>(cpu);
    if (i >= states.size()) continue;
    const PttCpuTotals totals = CpuTotalsAt(states[i], now);
    intervals_.push_back(
        IntervalBetween(static_cast<uint32_t>(cpu), last_totals_[i], last_snapshot_ns_, totals, now));
    last_totals_[i] = totals;
  }
  last_snapshot_ns_ = now;
}

void PttRecorder::ForEachThreadEntry(
    const std::function<void(const ptt_thread_key&, const ptt_thread&)>& visit) const {
  const int fd = bpf_map__fd(skel_->maps.threads);
  // Batched: a window close reads every thread the machine ran (thousands),
  // and one lookup plus one next-key call per thread was most of PTT's
  // share of the close. A kernel without batch lookups takes the loop below.
  // Entries are visited once every batch is in, so a batch refused midway
  // visits nothing twice.
  constexpr uint32_t kBatch = 1024;
  std::vector<ptt_thread_key> keys;
  std::vector<ptt_thread> values;
  // Room for as many as the last read found: growing batch by batch copied
  // and zeroed thousands of entries again per doubling.
  keys.reserve(thread_entries_hint_ + kBatch);
  values.reserve(thread_entries_hint_ + kBatch);
  uint32_t token = 0;
  bool first = true;
  bool batched = false;
  while (true) {
    const size_t at = keys.size();
    keys.resize(at + kBatch);
    values.resize(at + kBatch);
    uint32_t count = kBatch;
    LIBBPF_OPTS(bpf_map_batch_opts, opts);
    const int err = bpf_map_lookup_batch(fd, first ? nullptr : &token, &token, keys.data() + at,
                                         values.data() + at, &count, &opts);
    const int error = err < 0 ? errno : 0;
    if (err < 0 && error != ENOENT) break;  // start over, one key at a time
    keys.resize(at + std::min(count, kBatch));
    values.resize(keys.size());
    if (err < 0) {  // ENOENT: that was the last batch
      batched = true;
      break;
    }
    first = false;
  }
  if (batched) {
    thread_entries_hint_ = keys.size();
    for (size_t i = 0; i < keys.size(); ++i) visit(keys[i], values[i]);
    return;
  }
  ptt_thread_key key{}, next{};
  const ptt_thread_key* previous = nullptr;
  ptt_thread value{};
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    if (bpf_map_lookup_elem(fd, &next, &value) == 0) visit(next, value);
    key = next;
    previous = &key;
  }
}

std::vector<PttThread> PttRecorder::ReadThreads(std::vector<ptt_thread_key>* keys) const {
  std::vector<PttThread> out;
  ForEachThreadEntry([&](const ptt_thread_key& key, const ptt_thread& value) {
    if (keys) keys->push_back(key);
    PttThread t;
    t.pid = value.pid;
    t.tid = value.tid;
    // The thread records' precision (/proc/PID/stat's ticks), so both agree.
    t.process_start_ns = StartNsOfBoottime(key.start_ns);
    t.comm.assign(value.comm, strnlen(value.comm, sizeof(value.comm)));
    t.cpu_ns = value.cpu_ns;
    t.hardirq_ns = value.hardirq_ns;
    t.softirq_ns = value.softirq_ns;
    t.dispatches = value.dispatches;
    t.interrupts = value.interrupts;
    t.events.assign(events_.size(), 0);
    for (size_t e = 0; e < events_.size(); ++e) {
      const int slot = available_slot_of_event_[e];
      if (slot >= 0) t.events[e] = value.events[slot];
    }
    out.push_back(std::move(t));
  });
  return out;
}

std::vector<PttIrqVector> PttRecorder::ReadVectors() const {
  std::vector<PttIrqVector> out;
  const size_t ncpu = static_cast<size_t>(possible_cpus_);
  auto add = [&](uint32_t slot, const ptt_vector* per_cpu) {
    IrqKind kind;
    uint32_t vector;
    if (!DescribeVectorSlot(slot, kind, vector)) return;
    for (int cpu : cpus_) {
      if (static_cast<size_t>(cpu) >= ncpu) continue;
      const ptt_vector& v = per_cpu[static_cast<size_t>(cpu)];
      if (v.count == 0) continue;
      PttIrqVector row;
      row.cpu = static_cast<uint32_t>(cpu);
      row.kind = kind;
      row.vector = vector;
      row.name = kind == IrqKind::kSoftIrq  ? SoftIrqName(vector)
                 : kind == IrqKind::kSysVec ? SysVecName(vector)
                                            : IrqName(vector);
      row.count = v.count;
      row.ns = v.ns;
      out.push_back(std::move(row));
    }
  };
  // All 1,025 slots in one batched read (a lookup call per slot was about
  // 1 ms of every window close); slot by slot where batches are refused.
  const int fd = bpf_map__fd(skel_->maps.vectors);
  std::vector<uint32_t> keys(ARCPROF_PTT_VECTOR_SLOTS);
  std::vector<ptt_vector> all(static_cast<size_t>(ARCPROF_PTT_VECTOR_SLOTS) * ncpu);
  uint32_t count = ARCPROF_PTT_VECTOR_SLOTS;
  uint32_t token = 0;
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  const int err = bpf_map_lookup_batch(fd, nullptr, &token, keys.data(), all.data(), &count, &opts);
  if ((err == 0 || errno == ENOENT) && count == ARCPROF_PTT_VECTOR_SLOTS) {
    for (uint32_t i = 0; i < count; ++i) add(keys[i], &all[static_cast<size_t>(i) * ncpu]);
    return out;
  }
  std::vector<ptt_vector> values(ncpu);
  for (uint32_t slot = 0; slot < ARCPROF_PTT_VECTOR_SLOTS; ++slot) {
    if (bpf_map__lookup_elem(skel_->maps.vectors, &slot, sizeof(slot), values.data(),
                             values.size() * sizeof(ptt_vector), 0) != 0) {
      continue;
    }
    add(slot, values.data());
  }
  return out;
}

PttRecorderCounters PttRecorder::ReadCounters() const {
  PttRecorderCounters out;
  auto read = [&](uint32_t idx) { return SumPerCpuCounter(skel_->maps.ptt_counters, idx); };
  out.switches = read(ARCPROF_PTT_CTR_SWITCHES);
  out.threads_full = read(ARCPROF_PTT_CTR_THREADS_FULL);
  out.dropped_ns = read(ARCPROF_PTT_CTR_DROPPED_NS);
  out.event_read_errors = read(ARCPROF_PTT_CTR_EVENT_READ_ERR);
  out.unbalanced_irqs = read(ARCPROF_PTT_CTR_UNBALANCED_IRQ);
  out.open_hardirqs_at_switch = read(ARCPROF_PTT_CTR_OPEN_HARDIRQ_AT_SWITCH);
  out.open_softirqs_at_switch = read(ARCPROF_PTT_CTR_OPEN_SOFTIRQ_AT_SWITCH);
  out.unseen_switches = read(ARCPROF_PTT_CTR_UNSEEN_SWITCH);
  return out;
}

PttData PttRecorder::Finish() {
  // Detach first: the state is then final, and the open segments run up to `end`.
  links_.clear();
  return TakeWindow();
}

PttData PttRecorder::TakeWindow() {
  // The map is read once: every thread's row, and with it which threads are
  // gone (reading it a second time for the rows was half of PTT's close under
  // process churn). Gone threads' entries are deleted after the read, so that
  // the map (fixed size) does not fill up over days of thread churn; a thread
  // gone before the read has its final values in it (one that exits in the
  // few ms between the read and its tgkill loses its time since the read).
  // A thread is gone when its tid is, or when a later process's thread has
  // its tid (tgkill cannot tell a reused pid's process from the earlier one).
  // The CPUs' states are read first and the map right after, the order of
  // the close before the map was read once: read the other way round, a
  // task switched out in between had its last slice in neither read (the
  // next window held it), and PttRuntime.ContinuousWindowsHoldEachThreads...
  // failed 2 of 41 runs (a 1 s window held 1.08 s of the spinning thread).
  const uint64_t end = MonotonicNs();
  const std::vector<ptt_cpu> states = ReadCpuStates();
  PttData data;
  data.recorded = true;
  data.events = events_;
  std::vector<ptt_thread_key> keys;
  data.threads = ReadThreads(&keys);
  std::vector<ptt_thread_key> gone;
  std::vector<std::tuple<uint32_t, uint32_t, uint64_t>> gone_keys;
  {
    std::unordered_map<uint32_t, uint64_t> latest;  // tid -> the latest process start among the entries
    latest.reserve(keys.size());
    for (const ptt_thread_key& key : keys) {
      uint64_t& l = latest[key.tid];
      l = std::max<uint64_t>(l, key.start_ns);
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      const uint32_t tid = keys[i].tid;
      if (tid == 0) continue;
      const uint32_t pid = data.threads[i].pid;
      if (keys[i].start_ns < latest[tid] || (syscall(SYS_tgkill, pid, tid, 0) != 0 && errno == ESRCH)) {
        gone.push_back(keys[i]);
        gone_keys.emplace_back(pid, tid, data.threads[i].process_start_ns);
      }
    }
  }
  const int threads_fd = bpf_map__fd(skel_->maps.threads);
  // One system call for all of them (thousands a window under process churn).
  uint32_t deleted = static_cast<uint32_t>(gone.size());
  LIBBPF_OPTS(bpf_map_batch_opts, delete_opts);
  if (!gone.empty() && bpf_map_delete_batch(threads_fd, gone.data(), &deleted, &delete_opts) != 0) {
    for (size_t i = std::min<size_t>(deleted, gone.size()); i < gone.size(); ++i) {
      bpf_map_delete_elem(threads_fd, &gone[i]);
    }
  }
  // The task on each CPU at `end`, and its row by tid and process start
  // (the running task's entry, not an earlier process's that had its tid;
  // SIZE_MAX until found): one pass over the rows for the few running
  // tasks, not an index of all rows.
  std::vector<PttRunningTask> running_at(states.size());
  std::map<std::pair<uint32_t, uint64_t>, size_t> by_tid;
  for (int cpu : cpus_) {
    const size_t i = static_cast<size_t>(cpu);
    if (i >= states.size()) continue;
    running_at[i] = RunningTaskAt(states[i], end);
    const PttRunningTask& running = running_at[i];
    if (running.known && running.tid != 0) by_tid.emplace(std::pair(running.tid, StartNsOfBoottime(running.start_ns)), SIZE_MAX);
  }
  if (!by_tid.empty()) {
    for (size_t i = 0; i < data.threads.size(); ++i) {
      auto it = by_tid.find({data.threads[i].tid, data.threads[i].process_start_ns});
      if (it != by_tid.end()) it->second = i;  // the last row wins, as the index of all rows had it
    }
  }
  for (int cpu : cpus_) {
    const size_t i = static_cast<size_t>(cpu);
    if (i >= states.size()) continue;
    const PttCpuTotals totals = CpuTotalsAt(states[i], end);
    intervals_.push_back(
        IntervalBetween(static_cast<uint32_t>(cpu), last_totals_[i], last_snapshot_ns_, totals, end));
    last_totals_[i] = totals;
    // A thread still on the CPU: its time since the switch-in is not in the map.
    const PttRunningTask& running = running_at[i];
    if (!running.known || running.tid == 0) continue;
    const uint64_t running_start = StartNsOfBoottime(running.start_ns);
    auto it = by_tid.find({running.tid, running_start});
    if (it->second == SIZE_MAX) {  // no row yet
      it->second = data.threads.size();
      PttThread t;
      t.pid = running.pid;
      t.tid = running.tid;
      t.process_start_ns = running_start;
      t.comm = ProcComm(running.pid, running.tid);
      t.events.assign(events_.size(), 0);
      data.threads.push_back(std::move(t));
    }
    PttThread& thread = data.threads[it->second];
    AddRunningTask(running, thread);
    // Its counters since the switch-in: read the CPU's counting events directly.
    for (size_t e = 0; e < events_.size(); ++e) {
      const int slot = available_slot_of_event_[e];
      if (slot < 0) continue;
      uint64_t value = 0;
      if (read(EventFd(slot, cpu), &value, sizeof(value)) == sizeof(value) &&
          value >= states[i].events_at_switch[slot]) {
        thread.events[e] += value - states[i].events_at_switch[slot];
      }
    }
  }
  last_snapshot_ns_ = end;
  data.intervals = std::move(intervals_);
  intervals_.clear();
  data.irq_vectors = ReadVectors();
  // The deleted threads start from zero if their tid comes back: no
  // baseline. Under process churn they were most of what stayed here (12,000
  // a minute on a build machine) until the next window.
  std::sort(gone_keys.begin(), gone_keys.end());
  SinceLastWindow(data, gone_keys);
  rows_folded_ += FoldSmallestThreads(data.threads, max_window_rows_);
  std::sort(data.threads.begin(), data.threads.end(), [](const PttThread& a, const PttThread& b) {
    return std::tuple(a.pid, a.tid, a.process_start_ns) < std::tuple(b.pid, b.tid, b.process_start_ns);
  });
  return data;
}

void PttRecorder::SinceLastWindow(PttData& data, const std::vector<std::tuple<uint32_t, uint32_t, uint64_t>>& gone) {
  // The map and the vector slots count from the start; a window holds the
  // difference to what the previous window read. A value below the previous
  // one is a new thread with a reused tid (or a recycled map slot): all new.
  const size_t n_events = events_.size();
  auto key_of = [](const PttThread& t) { return std::tuple(t.pid, t.tid, t.process_start_ns); };
  auto by_key = [](const ThreadBaseline& b, const std::tuple<uint32_t, uint32_t, uint64_t>& k) { return b.key < k; };
  // The next baseline: every row read but the deleted threads', the first
  // row of a key winning.
  std::vector<size_t> order;
  order.reserve(data.threads.size());
  for (size_t i = 0; i < data.threads.size(); ++i) {
    if (!std::binary_search(gone.begin(), gone.end(), key_of(data.threads[i]))) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return key_of(data.threads[a]) < key_of(data.threads[b]); });
  std::vector<ThreadBaseline> cumulative;
  std::vector<uint64_t> cumulative_events;
  cumulative.reserve(order.size());
  cumulative_events.reserve(order.size() * n_events);
  for (size_t i : order) {
    const PttThread& t = data.threads[i];
    if (!cumulative.empty() && cumulative.back().key == key_of(t)) continue;
    cumulative.push_back({key_of(t), t.cpu_ns, t.hardirq_ns, t.softirq_ns, t.dispatches, t.interrupts});
    for (size_t e = 0; e < n_events; ++e) cumulative_events.push_back(e < t.events.size() ? t.events[e] : 0);
  }
  std::vector<PttThread> threads;
  threads.reserve(data.threads.size());
  for (PttThread& t : data.threads) {
    auto it = std::lower_bound(window_threads_.begin(), window_threads_.end(), key_of(t), by_key);
    if (it != window_threads_.end() && it->key == key_of(t)) {
      const ThreadBaseline& b = *it;
      const uint64_t* b_events = window_events_.data() + static_cast<size_t>(it - window_threads_.begin()) * n_events;
      bool grew = t.cpu_ns >= b.cpu_ns && t.hardirq_ns >= b.hardirq_ns && t.softirq_ns >= b.softirq_ns &&
                  t.dispatches >= b.dispatches && t.interrupts >= b.interrupts && t.events.size() == n_events;
      for (size_t e = 0; grew && e < n_events; ++e) grew = t.events[e] >= b_events[e];
      if (grew) {
        t.cpu_ns -= b.cpu_ns;
        t.hardirq_ns -= b.hardirq_ns;
        t.softirq_ns -= b.softirq_ns;
        t.dispatches -= b.dispatches;
        t.interrupts -= b.interrupts;
        for (size_t e = 0; e < n_events; ++e) t.events[e] -= b_events[e];
      }
    }
    if (t.cpu_ns || t.hardirq_ns || t.softirq_ns || t.dispatches || t.interrupts) threads.push_back(std::move(t));
  }
  data.threads = std::move(threads);
  window_threads_ = std::move(cumulative);
  window_events_ = std::move(cumulative_events);

  std::map<std::tuple<uint32_t, uint8_t, uint32_t>, std::pair<uint64_t, uint64_t>> vectors;
  std::vector<PttIrqVector> rows;
  for (PttIrqVector& v : data.irq_vectors) {
    const auto key = std::tuple(v.cpu, static_cast<uint8_t>(v.kind), v.vector);
    vectors[key] = {v.count, v.ns};
    auto it = window_vectors_.find(key);
    if (it != window_vectors_.end() && v.count >= it->second.first && v.ns >= it->second.second) {
      v.count -= it->second.first;
      v.ns -= it->second.second;
    }
    if (v.count > 0) rows.push_back(std::move(v));
  }
  data.irq_vectors = std::move(rows);
  window_vectors_ = std::move(vectors);
}

size_t PttRecorder::HeldBytes() const {
  // A std::map node: three pointers and a color besides its value.
  constexpr size_t kNode = 4 * sizeof(void*);
  size_t n = window_vectors_.size() * (kNode + 32);
  n += window_threads_.capacity() * sizeof(ThreadBaseline) + window_events_.capacity() * sizeof(uint64_t);
  return n;
}

}  // namespace arcprof
