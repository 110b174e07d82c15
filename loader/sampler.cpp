#include "loader/sampler.h"
#include "common/clock.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <spdlog/spdlog.h>

#include "events.h"
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
  s->skel_->rodata->filter_pids = options.filter_pids ? 1 : 0;
  s->skel_->rodata->self_pid = options.self_pid;
  s->skel_->rodata->unwind_mode = options.unwind_mode;
  s->skel_->rodata->stack_copy_bytes = options.stack_copy_bytes;
  s->skel_->rodata->copy_deep_stacks = options.copy_deep_stacks ? 1 : 0;
  if (options.off_cpu) {
    // The off-CPU switch path reads user registers through bpf_rdonly_cast
    // where the kernel has it (bpf/sample.bpf.c, user_regs_of).
    btf* vmlinux = btf__load_vmlinux_btf();
    s->skel_->rodata->has_rdonly_cast =
        vmlinux != nullptr && btf__find_by_name_kind(vmlinux, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
    btf__free(vmlinux);
  }
  // One record-building buffer per CPU (too large for a per-CPU map).
  bpf_map__set_max_entries(s->skel_->maps.scratch,
                           static_cast<uint32_t>(std::max(1, libbpf_num_possible_cpus())));

  // The ring buffer size must be a power-of-two number of pages.
  uint64_t bytes = static_cast<uint64_t>(options.buffer_mb) << 20;
  uint64_t pow2 = static_cast<uint64_t>(getpagesize());
  while (pow2 < bytes) pow2 <<= 1;
  bpf_map__set_max_entries(s->skel_->maps.samples, static_cast<uint32_t>(pow2));
  if (!options.filter_pids) {
    bpf_program__set_autoload(s->skel_->progs.on_fork, false);
  }
  bpf_program__set_autoload(s->skel_->progs.on_switch, options.off_cpu);
  bpf_map__set_max_entries(s->skel_->maps.offcpu_time, std::max(1024u, options.off_cpu_max_keys));

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
  return s;
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
  __atomic_fetch_or(&skel_->bss->target_bits[pid / 64], uint64_t{1} << (pid % 64),
                    __ATOMIC_RELAXED);
  return {};
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
  __atomic_fetch_and(&skel_->bss->target_bits[pid / 64], ~(uint64_t{1} << (pid % 64)),
                     __ATOMIC_RELAXED);
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
  return {};
}

Result<void> Sampler::Attach(SampleFn on_sample) {
  on_sample_ = std::move(on_sample);
  ring_buffer* rb = ring_buffer__new(bpf_map__fd(skel_->maps.samples),
                                     &Sampler::OnRingbufRecord, this, nullptr);
  if (!rb) return MakeError(std::string("cannot open the ring buffer: ") + strerror(errno));
  ring_.reset(rb);

  if (options_.filter_pids) {
    bpf_link* link = bpf_program__attach(skel_->progs.on_fork);
    if (!link) {
      return MakeError(std::string("cannot attach to sched_process_fork: ") + strerror(errno));
    }
    links_.emplace_back(link);
  }

  if (options_.off_cpu) {
    bpf_link* link = bpf_program__attach(skel_->progs.on_switch);
    if (!link) {
      return MakeError(std::string("cannot attach to sched_switch (--off-cpu): ") +
                       strerror(errno));
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

void Sampler::PollSideband(int timeout_ms) {
  if (sideband_) {
    perf_buffer__poll(sideband_.get(), timeout_ms);
  } else if (timeout_ms > 0) {
    usleep(static_cast<useconds_t>(timeout_ms) * 1000);
  }
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
  if (ring_) ring_buffer__consume(ring_.get());
  return !out_of_budget_;
}

uint64_t Sampler::DiscardSamples() {
  discarding_ = true;
  discarded_ = deferred_.size();
  deferred_.clear();
  if (ring_) ring_buffer__consume(ring_.get());
  discarding_ = false;
  return discarded_;
}

int Sampler::OnRingbufRecord(void* ctx, void* data, size_t size) {
  auto* self = static_cast<Sampler*>(ctx);
  if (self->discarding_) {
    ++self->discarded_;
    return 0;
  }
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
  out.offcpu_switches = read(ARCPROF_CTR_OFFCPU_SWITCHES);
  out.offcpu_stacks = read(ARCPROF_CTR_OFFCPU_STACKS);
  out.offcpu_lost_stacks = read(ARCPROF_CTR_OFFCPU_LOST_STACKS);
  out.offcpu_dropped = read(ARCPROF_CTR_OFFCPU_DROPPED);
  out.offcpu_dropped_ns = read(ARCPROF_CTR_OFFCPU_DROPPED_NS);
  return out;
}

std::optional<OffCpuTotal> Sampler::ReadOffCpu(uint64_t key) const {
  if (!options_.off_cpu) return std::nullopt;
  offcpu_value v{};
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.offcpu_time), &key, &v) != 0) return std::nullopt;
  return OffCpuTotal{key, v.ns, v.count};
}

void Sampler::DeleteOffCpu(uint64_t key) {
  if (options_.off_cpu) bpf_map_delete_elem(bpf_map__fd(skel_->maps.offcpu_time), &key);
}

std::vector<OffCpuTotal> Sampler::ReadOffCpu() const {
  std::vector<OffCpuTotal> out;
  if (!options_.off_cpu) return out;
  const int fd = bpf_map__fd(skel_->maps.offcpu_time);
  uint64_t key = 0, next = 0;
  const uint64_t* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    offcpu_value v{};
    if (bpf_map_lookup_elem(fd, &next, &v) == 0) out.push_back({next, v.ns, v.count});
    key = next;
    prev = &key;
  }
  return out;
}

}  // namespace arcprof
