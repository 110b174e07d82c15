#include "loader/offcpu_source.h"

#include <bpf/btf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "events.h"
#include "loader/offcpu_reason.h"
#include "loader/percpu_counters.h"
#include "loader/sampler.h"
#include "loader/stack_sample.h"
#include "loader/value_source.h"
#include "model/profile.h"
#include "model/value_types.h"
#include "offcpu.h"
#include "offcpu.skel.h"
#include "spaces/address_spaces.h"

namespace arcprof {
namespace {

class OffCpuSource final : public ValueSource {
 public:
  explicit OffCpuSource(OffCpuSourceOptions options) : options_(options) {}
  ~OffCpuSource() override { Detach(); }

  std::string_view name() const override { return model::kOffCpuNs.name; }

  Result<void> Load(RecordContext& context) override {
    skel_.reset(offcpu__open());
    if (!skel_) return MakeError(std::string("cannot open the off-CPU BPF object: ") + strerror(errno));
    if (auto ok = context.sampler->ShareRecordMaps(skel_->obj); !ok) return ok.error();
    // The interpreter walk (bpf/runtimes.bpf.h) sees the sampler's runtimes.
    if (auto ok = context.sampler->ShareRuntimeMaps(skel_->obj); !ok) return ok.error();
    // The switch path reads user registers through bpf_rdonly_cast where
    // the kernel has it (bpf/offcpu.bpf.c, user_regs_of).
    btf* vmlinux = btf__load_vmlinux_btf();
    skel_->rodata->has_rdonly_cast =
        vmlinux != nullptr && btf__find_by_name_kind(vmlinux, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
    btf__free(vmlinux);
    bpf_map__set_max_entries(skel_->maps.offcpu_time, std::max(1024u, options_.max_keys));
    if (int err = offcpu__load(skel_.get()); err != 0) {
      return MakeError("cannot load the off-CPU BPF program into the kernel: " + std::string(strerror(-err)));
    }
    return {};
  }

  Result<void> Start(RecordContext& context) override {
    link_ = bpf_program__attach(skel_->progs.on_switch);
    if (link_ == nullptr) {
      return MakeError(std::string("cannot attach to sched_switch (--off-cpu): ") + strerror(errno));
    }
    sink_ = context.sink;
    sink_->Route(ARCPROF_SOURCE_OFFCPU, this);
    return {};
  }

  void OnRecord(const StackSample& e, StackSink& sink) override {
    KeepOffCpuStack(e, sink);
    ++records_;
  }

  // Once a second: the keys of processes whose exit the side band reported
  // have their last time added to the open window and are dropped at once,
  // so that under process churn (hundreds of processes a second) the kept
  // stacks follow the live processes rather than a window's worth of dead
  // ones. So are the keys of a process whose pid another process holds now
  // (it exited too; its time goes to its own record, SampleProcessor::Add),
  // which the pid's liveness would keep as long as the new one lives.
  // Threads exiting inside live processes wait for Flush.
  void Poll(RecordContext& context) override {
    if (!skel_) return;
    const uint64_t now = MonotonicNs();
    if (now < next_retire_) return;
    next_retire_ = now + 1'000'000'000;
    const AddressSpaces& spaces = context.symbolizer.spaces();
    const auto keys = sink_->KeptKeys(ARCPROF_SOURCE_OFFCPU);
    size_t retired = 0, replaced = 0;
    for (const StackSink::Kept& k : keys) {
      bool exited;
      if (spaces.KnowsProcess(k.pid)) {
        // Which process held the pid at the record's time, asked now: the
        // record may have come before the side band told of its fork.
        const bool reused = spaces.Incarnation(k.pid, k.t_ns) < spaces.Incarnation(k.pid, UINT64_MAX);
        replaced += reused;
        exited = reused || spaces.ProcessExited(k.pid);
      } else {
        // A process the side band never told us about: ask the kernel.
        exited = kill(static_cast<pid_t>(k.pid), 0) != 0 && errno == ESRCH;
      }
      if (!exited) continue;
      ++retired;
      offcpu_value v{};
      if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.offcpu_time), &k.key, &v) == 0) AddSince(k.key, v);
      Drop(k.key);
    }
    reused_pid_keys_ += replaced;
    spdlog::debug("off-CPU: {} stacks kept, {} of exited processes dropped ({} of reused pids), {} keys read",
                  keys.size(), retired, replaced, reported_.size());
  }

  // Adds the off-CPU time since the previous read to the open window. Keys
  // of threads that had already exited at the previous read have all their
  // time counted by now: they leave the BPF map, the sink and reported_, so
  // a session under thread churn stays flat (and the fixed-size map does
  // not fill up).
  void Flush(RecordContext&, bool) override {
    if (!skel_) return;
    std::unordered_set<uint64_t> orphans;
    const int fd = bpf_map__fd(skel_->maps.offcpu_time);
    uint64_t key = 0, next = 0;
    const uint64_t* prev = nullptr;
    std::vector<std::pair<uint64_t, offcpu_value>> totals;
    while (bpf_map_get_next_key(fd, prev, &next) == 0) {
      offcpu_value v{};
      if (bpf_map_lookup_elem(fd, &next, &v) == 0) totals.emplace_back(next, v);
      key = next;
      prev = &key;
    }
    for (const auto& [k, v] : totals) {
      AddSince(k, v);
      // A key without a stack at two reads in a row (its record was lost,
      // or its thread's last switch re-added a dropped key) is dropped too.
      if (!sink_->Keeps(ARCPROF_SOURCE_OFFCPU, k)) {
        if (orphans_.count(k)) gone_.push_back(k);
        else orphans.insert(k);
      }
    }
    orphans_ = std::move(orphans);
    for (uint64_t k : gone_) Drop(k);
    gone_.clear();
    for (const StackSink::Kept& k : sink_->KeptKeys(ARCPROF_SOURCE_OFFCPU)) {
      if (k.tid != 0 && kill(static_cast<pid_t>(k.tid), 0) != 0 && errno == ESRCH) gone_.push_back(k.key);
    }
    ReadCounters();
  }

  void Detach() override {
    if (link_ != nullptr) {
      bpf_link__destroy(link_);
      link_ = nullptr;
    }
  }

  Result<void> CloseWindow(RecordContext&, model::Profile& window, bool last) override {
    if (records_ > 0 || ns_ > 0 || unattributed_ns_ > 0) {
      window.counters["offcpu_stacks"] += static_cast<int64_t>(records_);
      window.counters["offcpu_ns"] += static_cast<int64_t>(ns_);
      window.counters["offcpu_intervals"] += static_cast<int64_t>(intervals_);
      window.counters["offcpu_unattributed_ns"] += static_cast<int64_t>(unattributed_ns_);
      records_ = ns_ = intervals_ = unattributed_ns_ = 0;
    }
    // The BPF counters count from the start (read at the last Flush, while
    // the program was loaded); a window stores its share.
    auto delta = [](uint64_t now_value, uint64_t& reported) {
      const uint64_t d = now_value >= reported ? now_value - reported : now_value;
      reported = now_value;
      return static_cast<int64_t>(d);
    };
    window.counters["offcpu_switches"] = delta(counters_[0], reported_counters_[0]);
    window.counters["offcpu_lost_stacks"] = delta(counters_[1], reported_counters_[1]);
    window.counters["offcpu_dropped_intervals"] = delta(counters_[2], reported_counters_[2]);
    window.counters["offcpu_dropped_ns"] = delta(counters_[3], reported_counters_[3]);
    if (reused_pid_keys_ > 0) {
      window.counters["offcpu_stacks_of_reused_pids_retired"] += static_cast<int64_t>(reused_pid_keys_);
      reused_pid_keys_ = 0;
    }
    if (last) {
      Detach();
      if (sink_ != nullptr) sink_->Route(ARCPROF_SOURCE_OFFCPU, nullptr);
      skel_.reset();
    }
    return {};
  }

  size_t HeldBytes() const override {
    return reported_.size() * 48 + (orphans_.size() + gone_.size()) * 16;
  }

 private:
  void AddSince(uint64_t key, const offcpu_value& v) {
    auto& [ns, count] = reported_[key];
    const uint64_t dns = v.ns - std::min<uint64_t>(ns, v.ns);
    const uint64_t dcount = v.count - std::min<uint64_t>(count, v.count);
    ns = v.ns;
    count = v.count;
    if (dns == 0 && dcount == 0) return;
    if (!AddOffCpuTime(*sink_, key, dns)) {
      unattributed_ns_ += dns;  // its record was lost or malformed
      return;
    }
    ns_ += dns;
    intervals_ += dcount;
  }

  void Drop(uint64_t key) {
    bpf_map_delete_elem(bpf_map__fd(skel_->maps.offcpu_time), &key);
    sink_->Forget(ARCPROF_SOURCE_OFFCPU, key);
    reported_.erase(key);
  }

  void ReadCounters() {
    const bpf_map* counters = skel_->maps.counters;  // the sampler's (shared)
    counters_[0] = SumPerCpuCounter(counters, ARCPROF_CTR_OFFCPU_SWITCHES);
    counters_[1] = SumPerCpuCounter(counters, ARCPROF_CTR_OFFCPU_LOST_STACKS);
    counters_[2] = SumPerCpuCounter(counters, ARCPROF_CTR_OFFCPU_DROPPED);
    counters_[3] = SumPerCpuCounter(counters, ARCPROF_CTR_OFFCPU_DROPPED_NS);
  }

  struct SkelDeleter {
    void operator()(offcpu* s) const { offcpu__destroy(s); }
  };
  OffCpuSourceOptions options_;
  std::unique_ptr<offcpu, SkelDeleter> skel_;
  bpf_link* link_ = nullptr;
  StackSink* sink_ = nullptr;
  // Totals (ns, intervals) by key at the previous read.
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> reported_;
  std::vector<uint64_t> gone_;             // keys whose thread had exited at the previous read
  std::unordered_set<uint64_t> orphans_;   // keys read without a kept stack at the previous read
  uint64_t next_retire_ = 0;
  uint64_t records_ = 0, ns_ = 0, intervals_ = 0, unattributed_ns_ = 0;
  uint64_t reused_pid_keys_ = 0;  // kept stacks dropped because another process holds their pid
  uint64_t counters_[4] = {}, reported_counters_[4] = {};
};

}  // namespace

void KeepOffCpuStack(const StackSample& e, StackSink& sink) {
  SourceStack stack = sink.Stack(e);
  const OffCpuReason why = ClassifyOffCpu(e.source_arg, static_cast<uint32_t>(e.source_values[0]));
  // A thread preempted on its way back to user mode (an interrupt or a
  // system call returning, the kernel's return path calling schedule) was
  // running its user code: the kernel frames of that path are the same for
  // every such preemption and say nothing about the workload, yet each
  // distinct user leaf would get its own chain of them (on a loaded machine
  // a fifth of a compiler's call-tree nodes). Its stack is the user stack
  // and the reason. Preemptions inside the kernel keep their kernel frames.
  if (why == OffCpuReason::kPreempted && !stack.user.empty()) {
    for (const SymbolizedFrame& f : stack.kernel) {
      if (f.symbol == "irqentry_exit_to_user_mode" || f.symbol == "exit_to_user_mode_loop") {
        stack.kernel.clear();
        break;
      }
    }
  }
  // Why it went off CPU, as a pseudo-frame at the leaf.
  const LeafFrame reason{"[off-cpu]", OffCpuReasonFrame(why), FrameKind::kKernel};
  sink.Keep(ARCPROF_SOURCE_OFFCPU, e.source_key, stack, {&reason, 1});
}

bool AddOffCpuTime(StackSink& sink, uint64_t key, uint64_t ns) {
  const SourceValue value{model::kOffCpuNs, ns};
  return sink.Add(ARCPROF_SOURCE_OFFCPU, key, {&value, 1});
}

std::unique_ptr<RecordExtension> MakeOffCpuSource(OffCpuSourceOptions options) {
  return std::make_unique<OffCpuSource>(options);
}

}  // namespace arcprof
