#include "loader/sampler.h"
#include "common/clock.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <spdlog/spdlog.h>

#include "events.h"
#include "runtimes.h"
#include "loader/percpu_counters.h"
#include "sample.skel.h"

namespace arcprof {

void Sampler::SkeletonDeleter::operator()(::sample* s) const { sample__destroy(s); }
void Sampler::LinkDeleter::operator()(bpf_link* l) const { bpf_link__destroy(l); }
void Sampler::RingDeleter::operator()(ring_buffer* r) const { ring_buffer__free(r); }
void Sampler::PerfBufferDeleter::operator()(perf_buffer* p) const { perf_buffer__free(p); }

Sampler::~Sampler() { Detach(); }

void Sampler::Detach() {
  // Links first, then the event fds; the buffers go away with the object.
  links_.clear();
  event_fds_.clear();
}

namespace {

// libbpf's own messages go to the debug log (-v); failures reach the user as
// one-line errors from the callers.
int LibbpfPrint(enum libbpf_print_level level, const char* format, va_list args) {
  if (!spdlog::should_log(spdlog::level::debug)) return 0;
  static char line[1 << 20];
  vsnprintf(line, sizeof(line), format, args);
  spdlog::debug("libbpf: {}", line);
  return 0;
}

}  // namespace

Result<std::unique_ptr<Sampler>> Sampler::Load(const SamplerOptions& options) {
  libbpf_set_print(LibbpfPrint);
  std::unique_ptr<Sampler> s(new Sampler());
  s->options_ = options;
  s->skel_.reset(sample__open());
  if (!s->skel_) {
    return MakeError(std::string("cannot open the BPF object: ") + strerror(errno));
  }
  s->skel_->rodata_record->filter_pids = options.filter_pids ? 1 : 0;
  s->skel_->rodata_record->filter_cgroups = options.filter_cgroups ? 1 : 0;
  s->skel_->rodata_record->self_pid = options.self_pid;
  s->skel_->rodata_record->unwind_mode = options.unwind_mode;
  s->skel_->rodata_record->stack_copy_bytes = options.stack_copy_bytes;
  s->skel_->rodata_record->copy_deep_stacks = options.copy_deep_stacks ? 1 : 0;
  // One record-building buffer per CPU (too large for a per-CPU map).
  bpf_map__set_max_entries(s->skel_->maps.scratch,
                           static_cast<uint32_t>(std::max(1, libbpf_num_possible_cpus())));

  // A ring buffer's size must be a power-of-two number of pages.
  auto ring_size = [](uint64_t bytes) {
    uint64_t pow2 = static_cast<uint64_t>(getpagesize());
    while (pow2 < bytes) pow2 <<= 1;
    return pow2;
  };
  s->ring_max_bytes_ = ring_size(static_cast<uint64_t>(options.buffer_mb) << 20);
  s->ring_.bytes = options.ring_start_bytes == 0
                       ? s->ring_max_bytes_
                       : std::min(s->ring_max_bytes_, ring_size(options.ring_start_bytes));
  bpf_map__set_max_entries(s->skel_->maps.samples, static_cast<uint32_t>(s->ring_.bytes));
  if (!options.filter_pids) {
    bpf_program__set_autoload(s->skel_->progs.on_fork, false);
    bpf_program__set_autoload(s->skel_->progs.on_exit, false);
  }

  if (int err = sample__load(s->skel_.get()); err != 0) {
    if (err == -ENOMEM || err == -E2BIG) {
      return MakeError("cannot allocate the " + std::to_string(options.buffer_mb) +
                       " MiB sample ring buffer: " + std::string(strerror(-err)) +
                       "; use a smaller --buffer-mb");
    }
    return MakeError("cannot load the BPF programs into the kernel: " +
                     std::string(strerror(-err)) +
                     (err == -EPERM || err == -EACCES
                          ? " (needs root or CAP_BPF+CAP_PERFMON, and a kernel with BTF)"
                          : ""));
  }
  s->ring_.fd = bpf_map__fd(s->skel_->maps.samples);
  s->skel_->data_record->ring_max_bytes = s->ring_max_bytes_;
  s->poll_fd_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (!s->poll_fd_.valid()) return MakeError(std::string("cannot create an epoll instance: ") + strerror(errno));
  return s;
}

namespace {
// What woke Poll: side-band records or a sample ring filling up.
constexpr uint32_t kSidebandReady = 1;
constexpr uint32_t kRingFilling = 2;
// A replaced ring is consumed until this long after the swap: a program that
// looked it up just before writes its record within microseconds.
constexpr uint64_t kRingRetireNs = 50'000'000;
}  // namespace

Result<void> Sampler::Watch(int fd, uint32_t events, uint32_t tag) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u32 = tag;
  if (epoll_ctl(poll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    return MakeError(std::string("cannot watch a BPF buffer: ") + strerror(errno));
  }
  return {};
}

Result<void> Sampler::AddTargetPid(uint32_t pid) {
  if (pid >= ARCPROF_PID_LIMIT) {
    return MakeError("cannot add pid " + std::to_string(pid) + " to the filter: above " +
                     std::to_string(ARCPROF_PID_LIMIT - 1));
  }
  uint8_t one = 1;
  if (bpf_map__update_elem(skel_->maps.target_pids, &pid, sizeof(pid), &one, sizeof(one),
                           BPF_ANY) != 0) {
    return MakeError("cannot add pid " + std::to_string(pid) + " to the filter: " +
                     strerror(errno));
  }
  // The programs test the bitmap (the mmapped .bss); the on_fork program
  // sets bits in the same words, hence the atomic operations.
  __atomic_fetch_or(&skel_->data_record->target_bits[pid / 64], uint64_t{1} << (pid % 64),
                    __ATOMIC_RELAXED);
  return {};
}

Result<void> Sampler::SetRuntimeProcess(uint32_t pid, const runtime_proc& proc) {
  if (bpf_map__update_elem(skel_->maps.runtime_procs, &pid, sizeof(pid), &proc, sizeof(proc), BPF_ANY) != 0) {
    return MakeError("cannot describe runtime process " + std::to_string(pid) + ": " + strerror(errno));
  }
  return {};
}

void Sampler::RemoveRuntimeProcess(uint32_t pid) {
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.runtime_procs), &pid);
}

std::vector<uint32_t> Sampler::TargetPids() const {
  std::vector<uint32_t> out;
  if (!options_.filter_pids) return out;
  const int fd = bpf_map__fd(skel_->maps.target_pids);
  uint32_t key = 0, next = 0;
  const uint32_t* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    out.push_back(next);
    key = next;
    prev = &key;
  }
  return out;
}

void Sampler::RemoveTargetPid(uint32_t pid) {
  if (!options_.filter_pids || pid >= ARCPROF_PID_LIMIT) return;
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.target_pids), &pid);
  __atomic_fetch_and(&skel_->data_record->target_bits[pid / 64], ~(uint64_t{1} << (pid % 64)),
                     __ATOMIC_RELAXED);
}

Result<void> Sampler::AddTargetCgroup(uint64_t id, uint32_t level) {
  if (level == 0) return MakeError("the root cgroup is the whole machine: no cgroup filter needed");
  // The depth first, then the id: the program tests depths it knows.
  uint32_t* levels = skel_->data_record->cgroup_levels;
  size_t slot = 0;
  while (slot < ARCPROF_CGROUP_LEVELS && levels[slot] != 0 && levels[slot] != level) ++slot;
  if (slot == ARCPROF_CGROUP_LEVELS) {
    return MakeError("cannot filter cgroups at more than " + std::to_string(ARCPROF_CGROUP_LEVELS) +
                     " different depths of the hierarchy");
  }
  if (levels[slot] == 0) __atomic_store_n(&levels[slot], level, __ATOMIC_RELEASE);
  uint8_t one = 1;
  if (bpf_map__update_elem(skel_->maps.target_cgroups, &id, sizeof(id), &one, sizeof(one), BPF_ANY) != 0) {
    return MakeError("cannot add cgroup " + std::to_string(id) + " to the filter: " + strerror(errno) +
                     (errno == E2BIG ? " (at most " + std::to_string(ARCPROF_MAX_CGROUPS) + " cgroups)" : ""));
  }
  return {};
}

void Sampler::RemoveTargetCgroup(uint64_t id) {
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.target_cgroups), &id);
}

Result<void> Sampler::OpenSideband(SidebandFn on_record) {
  on_sideband_ = std::move(on_record);
  auto cpus = OnlineCpus();
  if (!cpus) return cpus.error();
  perf_event_attr attr = SidebandAttr();
  std::vector<int> keys = *cpus;
  perf_buffer_raw_opts opts{};
  opts.sz = sizeof(opts);
  opts.cpu_cnt = static_cast<int>(cpus->size());
  opts.cpus = cpus->data();
  opts.map_keys = keys.data();
  // 128 pages (512 KiB) per CPU: a build machine forks hundreds of processes
  // a second, each a burst of ~20 mmap records; 64 pages lost records there.
  perf_buffer* pb = perf_buffer__new_raw(bpf_map__fd(skel_->maps.sideband), 128, &attr,
                                         &Sampler::OnPerfRecord, this, &opts);
  if (!pb) {
    return MakeError(std::string("cannot open the side-band perf events: ") + strerror(errno));
  }
  sideband_.reset(pb);
  return Watch(perf_buffer__epoll_fd(pb), EPOLLIN, kSidebandReady);
}

Result<void> Sampler::Attach(SampleFn on_sample) {
  on_sample_ = std::move(on_sample);
  ring_buffer* rb = ring_buffer__new(ring_.fd, &Sampler::OnRingbufRecord, this, nullptr);
  if (!rb) return MakeError(std::string("cannot open the ring buffer: ") + strerror(errno));
  ring_.consumer.reset(rb);
  // Edge-triggered: the ring is readable whenever it holds a record, and only
  // a record's wakeup (a ring filling up, bpf/sample.bpf.c) is news.
  if (auto ok = Watch(ring_.fd, EPOLLIN | EPOLLET, kRingFilling); !ok) return ok;

  if (options_.filter_pids) {
    bpf_link* link = bpf_program__attach(skel_->progs.on_fork);
    if (!link) {
      return MakeError(std::string("cannot attach to sched_process_fork: ") + strerror(errno));
    }
    links_.emplace_back(link);
    link = bpf_program__attach(skel_->progs.on_exit);
    if (!link) {
      return MakeError(std::string("cannot attach to sched_process_exit: ") + strerror(errno));
    }
    links_.emplace_back(link);
  }

  auto cpus = OnlineCpus();
  if (!cpus) return cpus.error();
  for (int cpu : *cpus) {
    auto fd = OpenSamplingEvent(options_.event, options_.frequency_hz, cpu, options_.period);
    if (!fd) return fd.error();
    bpf_link* link = bpf_program__attach_perf_event(skel_->progs.on_sample, fd->get());
    if (!link) {
      return MakeError("cannot attach the sampler on cpu " + std::to_string(cpu) + ": " +
                       strerror(errno));
    }
    links_.emplace_back(link);
    event_fds_.push_back(std::move(*fd));
  }
  return {};
}

bool Sampler::Poll(int timeout_ms) {
  epoll_event events[4];
  const int n = epoll_wait(poll_fd_.get(), events, 4, timeout_ms);
  bool sideband = false;
  for (int i = 0; i < n; ++i) {
    if (events[i].data.u32 == kSidebandReady) sideband = true;
    if (events[i].data.u32 == kRingFilling) ring_woke_ = true;
  }
  if (sideband && sideband_) perf_buffer__consume(sideband_.get());
  return ring_woke_;
}

void Sampler::DrainSideband() {
  if (sideband_) perf_buffer__consume(sideband_.get());
}

namespace {
// Records handled between two looks at the clock.
constexpr uint32_t kRecordsPerClockCheck = 64;
}  // namespace

bool Sampler::DrainSamples(uint64_t horizon_ns, uint64_t budget_end_ns) {
  horizon_ns_ = horizon_ns;
  budget_end_ns_ = budget_end_ns;
  out_of_budget_ = false;
  while (!deferred_.empty()) {
    const std::vector<uint8_t>& rec = deferred_.front();
    uint64_t ts;
    memcpy(&ts, rec.data(), sizeof(ts));
    if (ts > horizon_ns) return true;  // still too new; the ring waits behind it
    on_sample_(rec.data(), rec.size());
    deferred_.pop_front();
  }
  // A ring that is filling grows before the work: records land in the
  // larger one while this drain runs.
  ring_woke_ = false;
  MaybeGrowRing();
  // Replaced rings first: their records are older than the current ring's.
  // One consumed to its end 50 ms after the swap is done.
  const uint64_t now = MonotonicNs();
  size_t done = 0;
  for (size_t i = 0; i < retiring_.size(); ++i) {
    const bool old_enough = now - retiring_[i].retired_ns >= kRingRetireNs;
    if (!ConsumeRing(retiring_[i])) return !out_of_budget_;
    if (old_enough && done == i) ++done;
  }
  for (; done > 0; --done) {
    epoll_ctl(poll_fd_.get(), EPOLL_CTL_DEL, retiring_.front().fd, nullptr);
    retiring_.pop_front();
  }
  ConsumeRing(ring_);
  return !out_of_budget_;
}

bool Sampler::ConsumeRing(Ring& ring) {
  ring_buffer* consumer = ring.consumer.get();
  return consumer == nullptr || ring_buffer__consume(consumer) >= 0;
}

void Sampler::MaybeGrowRing() {
  const uint64_t wakeups = __atomic_load_n(&skel_->data_record->ring_wakeups, __ATOMIC_RELAXED);
  if (wakeups == ring_wakeups_seen_) return;
  ring_wakeups_seen_ = wakeups;
  GrowRing();
}

void Sampler::GrowRing() {
  if (ring_.bytes >= ring_max_bytes_ || !ring_.consumer) return;
  const uint64_t bytes = std::min(ring_.bytes * 8, ring_max_bytes_);
  Ring next;
  next.bytes = bytes;
  next.owned.reset(bpf_map_create(BPF_MAP_TYPE_RINGBUF, "samples", 0, 0, static_cast<uint32_t>(bytes), nullptr));
  next.fd = next.owned.get();
  if (next.owned.valid()) {
    next.consumer.reset(ring_buffer__new(next.fd, &Sampler::OnRingbufRecord, this, nullptr));
  }
  const uint32_t zero = 0;
  if (!next.consumer || !Watch(next.fd, EPOLLIN | EPOLLET, kRingFilling) ||
      bpf_map_update_elem(bpf_map__fd(skel_->maps.sample_rings), &zero, &next.fd, BPF_ANY) != 0) {
    // No larger ring (memory, RLIMIT_MEMLOCK on old kernels): keep this one,
    // and records stop waking us for it.
    spdlog::debug("cannot grow the sample ring to {} MiB: {}", bytes >> 20, strerror(errno));
    if (next.fd >= 0) epoll_ctl(poll_fd_.get(), EPOLL_CTL_DEL, next.fd, nullptr);
    ring_max_bytes_ = ring_.bytes;
    skel_->data_record->ring_max_bytes = ring_max_bytes_;
    return;
  }
  spdlog::debug("sample ring grown from {} KiB to {} KiB", ring_.bytes >> 10, bytes >> 10);
  ring_.retired_ns = MonotonicNs();
  retiring_.push_back(std::move(ring_));
  ring_ = std::move(next);
  ++ring_grows_;
}

uint64_t Sampler::DiscardSamples() {
  discarding_ = true;
  discarded_ = deferred_.size();
  deferred_.clear();
  for (size_t i = 0; i < retiring_.size(); ++i) ConsumeRing(retiring_[i]);
  ConsumeRing(ring_);
  discarding_ = false;
  return discarded_;
}

int Sampler::OnRingbufRecord(void* ctx, void* data, size_t size) {
  auto* self = static_cast<Sampler*>(ctx);
  if (self->discarding_) {
    ++self->discarded_;
    return 0;
  }
  // A ring filling up while this drain works grows now (one load from the
  // mmapped .bss per record).
  self->MaybeGrowRing();
  uint64_t ts = 0;
  if (size >= sizeof(ts)) memcpy(&ts, data, sizeof(ts));
  if (ts > self->horizon_ns_) {
    // libbpf has already consumed this record: keep a copy, stop for now.
    const auto* bytes = static_cast<const uint8_t*>(data);
    self->deferred_.emplace_back(bytes, bytes + size);
    return -1;
  }
  self->on_sample_(data, size);
  if (self->budget_end_ns_ != UINT64_MAX && ++self->since_clock_check_ >= kRecordsPerClockCheck) {
    self->since_clock_check_ = 0;
    if (MonotonicNs() >= self->budget_end_ns_) {
      self->out_of_budget_ = true;
      return -1;  // this record is handled; the rest waits in the ring
    }
  }
  return 0;
}

enum bpf_perf_event_ret Sampler::OnPerfRecord(void* ctx, int cpu, perf_event_header* event) {
  auto* self = static_cast<Sampler*>(ctx);
  if (event->type == PERF_RECORD_LOST) {
    uint64_t lost = 0;
    memcpy(&lost, reinterpret_cast<const char*>(event) + sizeof(*event) + 8, sizeof(lost));
    self->sideband_lost_ += lost;
  } else if (self->on_sideband_) {
    self->on_sideband_(event);
  }
  return LIBBPF_PERF_EVENT_CONT;
}

SamplerCounters Sampler::ReadCounters() const {
  SamplerCounters out;
  auto read = [&](uint32_t idx) { return SumPerCpuCounter(skel_->maps.counters, idx); };
  out.samples = read(ARCPROF_CTR_SAMPLES);
  out.lost_ringbuf = read(ARCPROF_CTR_LOST_RINGBUF);
  out.kstack_errors = read(ARCPROF_CTR_KSTACK_ERR);
  out.ustack_errors = read(ARCPROF_CTR_USTACK_ERR);
  out.followed_forks = read(ARCPROF_CTR_FOLLOWED_FORKS);
  out.stack_faults = read(ARCPROF_CTR_STACK_FAULT);
  out.filtered = read(ARCPROF_CTR_FILTERED);
  return out;
}

uint64_t Sampler::ReadCounter(uint32_t index) const { return SumPerCpuCounter(skel_->maps.counters, index); }

namespace {

bpf_map* FindMap(bpf_object* object, const char* name) {
  bpf_map* m = nullptr;
  bpf_object__for_each_map(m, object) {
    if (strcmp(bpf_map__name(m), name) == 0) return m;
  }
  return nullptr;
}

// Makes `source`'s map of the same name as `ours` use ours.
Result<void> ShareMap(bpf_object* source, const bpf_map* ours, const char* header) {
  bpf_map* theirs = FindMap(source, bpf_map__name(ours));
  if (theirs == nullptr || bpf_map__value_size(theirs) != bpf_map__value_size(ours)) {
    return MakeError(std::string("BPF object ") + bpf_object__name(source) + " does not share the map " +
                     bpf_map__name(ours) + " (" + header + ")");
  }
  if (int err = bpf_map__reuse_fd(theirs, bpf_map__fd(ours)); err != 0) {
    return MakeError(std::string("cannot share the map ") + bpf_map__name(ours) + ": " + strerror(-err));
  }
  return {};
}

}  // namespace

Result<void> Sampler::ShareRecordMaps(bpf_object* source, bool own_scratch) const {
  // The maps every stack record goes through (bpf/stack_record.bpf.h).
  const bpf_map* shared[] = {skel_->maps.sample_rings, skel_->maps.scratch, skel_->maps.counters,
                             skel_->maps.target_cgroups, skel_->maps.data_record};
  auto find = [source](const bpf_map* ours) { return FindMap(source, bpf_map__name(ours)); };
  for (const bpf_map* ours : shared) {
    if (own_scratch && ours == skel_->maps.scratch) {
      if (bpf_map* theirs = find(ours); theirs != nullptr) {
        bpf_map__set_max_entries(theirs, static_cast<uint32_t>(std::max(1, libbpf_num_possible_cpus())));
        continue;
      }
    }
    if (auto ok = ShareMap(source, ours, "bpf/stack_record.bpf.h"); !ok) return ok.error();
  }
  // The settings: a copy, frozen with the source's object at its load.
  bpf_map* rodata = find(skel_->maps.rodata_record);
  size_t size = 0;
  const void* value = rodata != nullptr ? bpf_map__initial_value(rodata, &size) : nullptr;
  if (value == nullptr || size != sizeof(*skel_->rodata_record) ||
      bpf_map__set_initial_value(rodata, skel_->rodata_record, size) != 0) {
    return MakeError(std::string("BPF object ") + bpf_object__name(source) +
                     " does not share the record settings (.rodata.record)");
  }
  return {};
}

Result<void> Sampler::ShareRuntimeMaps(bpf_object* source) const {
  // Not the thread-state cache (an LRU map, which takes a lock to insert):
  // a sample taken in an NMI (a hardware event) could interrupt the other
  // program holding that lock on the same CPU. Each object keeps its own.
  return ShareMap(source, skel_->maps.runtime_procs, "bpf/runtimes.bpf.h");
}

}  // namespace arcprof
