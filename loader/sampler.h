// The loaded BPF sampler: skeleton, per-CPU sampling events, the sample ring
// buffer and the side-band perf buffer. Move-only; destroying it detaches
// everything (links and perf fds are closed, nothing is pinned).
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/scoped_fd.h"
#include "loader/perf_events.h"

#include <bpf/libbpf.h>

struct sample;
struct runtime_proc;

namespace arcprof {

struct SamplerOptions {
  EventSpec event;
  uint64_t frequency_hz = 999;
  uint64_t period = 0;  // sample every `period` events instead (perf's -c)
  uint32_t buffer_mb = 16;           // the largest sample ring
  // The first sample ring (0: buffer_mb at once). Once a record finds the
  // ring more than a quarter full (it wakes the loader and counts it), the
  // ring is replaced by one eight times larger, up to buffer_mb, before the
  // next record is handled: the ring's pages count twice in RSS from the
  // start, and a short command must not pay for what a busy machine needs.
  uint64_t ring_start_bytes = 0;
  bool filter_pids = false;  // only processes in the target set (and their children)
  bool filter_cgroups = false;  // only tasks in (or below) the target cgroups (AddTargetCgroup)
  uint32_t self_pid = 0;
  uint32_t unwind_mode = 0;          // ARCPROF_UNWIND_*
  uint32_t stack_copy_bytes = 65536; // dwarf/hybrid user stack copy
  bool copy_deep_stacks = false;     // a stack deeper than the copy is copied to its base
};

struct SamplerCounters {
  uint64_t samples = 0;
  uint64_t lost_ringbuf = 0;
  uint64_t kstack_errors = 0;
  uint64_t ustack_errors = 0;
  uint64_t followed_forks = 0;
  uint64_t stack_faults = 0;
  uint64_t filtered = 0;  // samples of tasks outside the pid or cgroup filter, not taken
};

class Sampler {
 public:
  // Raw ring buffer record (a sample_event header followed by frames).
  using SampleFn = std::function<void(const void* data, size_t size)>;
  // Raw side-band perf record.
  using SidebandFn = std::function<void(const perf_event_header* header)>;

  // Opens and loads the BPF object. Nothing is attached yet.
  static Result<std::unique_ptr<Sampler>> Load(const SamplerOptions& options);
  ~Sampler();

  Result<void> AddTargetPid(uint32_t pid);
  // The followed processes (the BPF filter adds children as they fork), and
  // taking one out once it exited: the map is fixed-size, and a session of
  // days under process churn would fill it (new children then unsampled).
  std::vector<uint32_t> TargetPids() const;
  void RemoveTargetPid(uint32_t pid);
  // Adds cgroup v2 `id` at depth `level` (>= 1) to the cgroup filter: its
  // tasks and those of every cgroup below it are sampled. Errors: too many
  // cgroups or distinct depths (bpf/events.h).
  Result<void> AddTargetCgroup(uint64_t id, uint32_t level);
  void RemoveTargetCgroup(uint64_t id);
  // What the sampler reads for an interpreted runtime in pid (bpf/runtimes.h,
  // runtimes/), and forgetting it (the process exited).
  Result<void> SetRuntimeProcess(uint32_t pid, const runtime_proc& proc);
  void RemoveRuntimeProcess(uint32_t pid);
  // Opens side-band events on every online CPU; records go to `on_record`.
  Result<void> OpenSideband(SidebandFn on_record);
  // Opens the sampling events on every online CPU and attaches the program.
  Result<void> Attach(SampleFn on_sample);

  // Waits up to timeout_ms for side-band records or a sample ring that is
  // filling up, and handles the side-band records ready. Returns true when
  // the sample ring asked to be drained now (DrainSamples then grows it).
  bool Poll(int timeout_ms);
  // Handles every pending side-band record / sample.
  void DrainSideband();
  // Handles samples taken up to horizon_ns (CLOCK_MONOTONIC). Later ones wait
  // for the next drain: their process events may not have been read yet.
  // Stops once CLOCK_MONOTONIC passes budget_end_ns, leaving the rest in the
  // ring, so that a sample rate above what we can process never holds the
  // caller (and its signal checks) in here. Returns false when it stopped
  // for the budget with samples still pending.
  bool DrainSamples(uint64_t horizon_ns = UINT64_MAX, uint64_t budget_end_ns = UINT64_MAX);
  // Counts and drops what is left in the sample ring (after Detach(), when
  // the final drain ran out of time). Returns how many records it dropped.
  uint64_t DiscardSamples();
  // Stops sampling: closes the sampling events and their links. The rings
  // stay readable, so what was sampled before can still be drained.
  void Detach();
  SamplerCounters ReadCounters() const;
  // One counter of the shared per-CPU counters map (ARCPROF_CTR_*), summed.
  uint64_t ReadCounter(uint32_t index) const;
  // Points a value source's BPF object (opened, not loaded; it includes
  // bpf/stack_record.bpf.h) at this sampler's record maps: the ring, the
  // scratch buffer, the counters, the pid and cgroup filter (.data.record)
  // and a copy of its settings (.rodata.record), so its records are this
  // sampler's records. With own_scratch the object keeps its scratch buffer
  // (one per CPU; ARCPROF_RECORD_OWN_SCRATCH). Errors: a map missing or of
  // another size.
  Result<void> ShareRecordMaps(bpf_object* source, bool own_scratch = false) const;
  // Points an object that runs the interpreter walk too (it includes
  // bpf/runtimes.bpf.h; off-CPU) at this sampler's recognized processes
  // (runtime_procs, which the runtime extension fills), so both walks see
  // the same runtimes. Errors as above.
  Result<void> ShareRuntimeMaps(bpf_object* source) const;
  uint64_t sideband_lost() const { return sideband_lost_; }
  // The sample ring in use, and how many times it was replaced by a larger one.
  uint64_t ring_bytes() const { return ring_.bytes; }
  uint32_t ring_grows() const { return ring_grows_; }
  const SamplerOptions& options() const { return options_; }

 private:
  Sampler() = default;
  static int OnRingbufRecord(void* ctx, void* data, size_t size);
  static enum bpf_perf_event_ret OnPerfRecord(void* ctx, int cpu, perf_event_header* event);

  struct SkeletonDeleter {
    void operator()(::sample* s) const;
  };
  struct LinkDeleter {
    void operator()(bpf_link* l) const;
  };
  struct RingDeleter {
    void operator()(ring_buffer* r) const;
  };
  struct PerfBufferDeleter {
    void operator()(perf_buffer* p) const;
  };

  // One sample ring: the skeleton's first one (not owned) or a larger one
  // made by GrowRing (owned). The consumer goes first: it maps the ring.
  struct Ring {
    ScopedFd owned;
    int fd = -1;
    uint64_t bytes = 0;
    uint64_t retired_ns = 0;  // when a larger ring replaced it
    std::unique_ptr<ring_buffer, RingDeleter> consumer;
  };
  // Consumes one ring; false when a record stopped it (horizon or budget).
  // May run GrowRing (from a record's callback): `ring` is not used after.
  bool ConsumeRing(Ring& ring);
  // Grows the ring when a record asked for it since the last look.
  void MaybeGrowRing();
  // Puts a ring eight times larger in place of the current one (up to the
  // largest); the old one is drained first until it is retired.
  void GrowRing();
  Result<void> Watch(int fd, uint32_t events, uint32_t tag);

  SamplerOptions options_;
  std::unique_ptr<::sample, SkeletonDeleter> skel_;
  std::vector<ScopedFd> event_fds_;
  std::vector<std::unique_ptr<bpf_link, LinkDeleter>> links_;
  ScopedFd poll_fd_;  // epoll: the side band's buffers and the sample rings
  Ring ring_;
  // Replaced rings, oldest first, with older records than ring_'s. A deque:
  // GrowRing may add one while another is being consumed.
  std::deque<Ring> retiring_;
  uint64_t ring_max_bytes_ = 0;
  uint64_t ring_wakeups_seen_ = 0;
  uint32_t ring_grows_ = 0;
  bool ring_woke_ = false;
  std::unique_ptr<perf_buffer, PerfBufferDeleter> sideband_;
  SampleFn on_sample_;
  std::deque<std::vector<uint8_t>> deferred_;  // consumed from the ring, past the horizon
  uint64_t horizon_ns_ = UINT64_MAX;
  uint64_t budget_end_ns_ = UINT64_MAX;
  uint32_t since_clock_check_ = 0;
  bool out_of_budget_ = false;
  bool discarding_ = false;
  uint64_t discarded_ = 0;
  SidebandFn on_sideband_;
  uint64_t sideband_lost_ = 0;
};

}  // namespace arcprof
