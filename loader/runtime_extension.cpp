#include "loader/runtime_extension.h"

#include <sys/mman.h>

#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "loader/jit_sources.h"
#include "loader/sample_processor.h"
#include "loader/sampler.h"
#include "model/profile.h"
#include "runtimes/runtime.h"
#include "symbolize/symbolizer.h"

namespace arcprof {
namespace {

// What a process's names need after its exit: samples taken before it are
// drained within a second.
constexpr uint64_t kForgetAfterExitNs = 3'000'000'000;

class RuntimeExtension : public RecordExtension {
 public:
  explicit RuntimeExtension(const RuntimeExtensionOptions& options)
      : options_(options),
        jit_([this](uint32_t pid, JitProcessSource& s) { for (const auto& rt : runtimes_) rt->JitSourceOpened(pid, s); },
             [this](uint32_t pid, JitProcessSource& s) { for (const auto& rt : runtimes_) rt->JitSourceClosing(pid, s); }) {
    // With --no-runtimes, only the runtimes with nothing to read at sample
    // time (Java: its agent, its thread names) run.
    for (auto& rt : runtimes::MakeRuntimes()) {
      if (options.frames || rt->id() == ARCPROF_RUNTIME_NONE) runtimes_.push_back(std::move(rt));
    }
  }
  ~RuntimeExtension() override {
    if (symbolizer_) symbolizer_->spaces().SetMappingObserver(this, nullptr);
    if (symbolizer_) symbolizer_->SetJitFrameRefiner(this, nullptr);
    if (processor_) processor_->SetRuntimes({});
  }

  std::string_view name() const override { return "runtimes"; }

  Result<void> Start(RecordContext& context) override {
    jit_.Start(context.symbolizer);
    if (context.sampler == nullptr || context.processor == nullptr) return {};
    symbolizer_ = &context.symbolizer;
    sampler_ = context.sampler;
    processor_ = context.processor;
    host_.emplace(runtimes::RuntimeHost{context.symbolizer.spaces(), context.system_wide, context.target_pids,
                                        options_.attach, options_.quiet, context.drain,
                                        [&context](uint32_t pid) { context.held_pids.insert(pid); },
                                        [sampler = context.sampler] { return sampler->sideband_lost(); }});
    processor_->SetRuntimes(runtimes_);
    symbolizer_->spaces().SetMappingObserver(this, [this](uint32_t pid, const MappingEvent& m) {
      if (!(m.prot & PROT_EXEC) || recognized_.count(pid)) return;
      for (const auto& rt : runtimes_) {
        if (rt->MayHost(m.path)) {
          // Recognized at once where the file can be had (the walk in BPF
          // starts with the next sample, not at the next drain: the first
          // 100-200 ms of a process were native only); else at a poll.
          const Pending p{pid, m.start};
          if (!Recognize(p, MonotonicNs())) pending_.push_back(p);
          return;
        }
      }
    }, /*replay_known=*/true);
    // A perf map entry of a recognized process may be its runtime's own code
    // of a known shape (CPython's -X perf trampolines): the runtime says how
    // the unwinder steps it.
    symbolizer_->SetJitFrameRefiner(this, [this](uint32_t pid, JitSymbol& code) {
      if (!recognized_.count(pid)) return;
      for (const auto& rt : runtimes_) rt->RefineJitFrame(pid, code);
    });
    // Processes already running (replayed above) are recognized before the
    // first poll: their samples are named from the start.
    RecognizePending(MonotonicNs());
    // Then each runtime's own start (Java attaches to the JVMs running now,
    // draining the ring meanwhile).
    for (const auto& rt : runtimes_) rt->Start(*host_);
    return {};
  }

  void Poll(RecordContext& context) override {
    const uint64_t now = MonotonicNs();
    if (host_) {
      RecognizePending(now);
      // Before the sources are tailed: a JVM attached just now has its
      // jitdump looked for at once (JitProcessSource::Rediscover).
      for (const auto& rt : runtimes_) rt->Poll(*host_, now);
    }
    jit_.Poll(JitMonotonicNowNs());
    if (!host_) return;
    // Exited processes leave the BPF map at once and their names a little later.
    for (auto it = recognized_.begin(); it != recognized_.end();) {
      const uint32_t pid = it->first;
      if (it->second.exited_ns == 0 && symbolizer_->spaces().ProcessExited(pid)) {
        if (it->second.in_sampler) sampler_->RemoveRuntimeProcess(pid);
        it->second.exited_ns = now;
      }
      if (it->second.exited_ns != 0 && now - it->second.exited_ns > kForgetAfterExitNs) {
        for (const auto& rt : runtimes_) rt->Forget(pid);
        it = recognized_.erase(it);
        continue;
      }
      ++it;
    }
  }

  Result<void> CloseWindow(RecordContext& context, model::Profile& window, bool last) override {
    // At the last window the sampler may be gone already: nothing of it is
    // touched here.
    jit_.CloseWindow(window.counters);
    if (host_) {
      std::vector<runtimes::WindowThread> threads;
      threads.reserve(window.threads.size());
      for (model::ThreadRecord& t : window.threads) threads.push_back({t.pid, t.tid, &t.comm});
      for (const auto& rt : runtimes_) rt->CloseWindow(*host_, threads, last);
    }
    for (const auto& rt : runtimes_) {
      rt->TakeCounters([&window](std::string_view name, int64_t v) { window.counters[std::string(name)] += v; });
    }
    if (!last) jit_.ForgetExited();
    if (last) {
      if (symbolizer_) symbolizer_->spaces().SetMappingObserver(this, nullptr);
      if (symbolizer_) symbolizer_->SetJitFrameRefiner(this, nullptr);
      symbolizer_ = nullptr;
    }
    return {};
  }

  size_t HeldBytes() const override {
    size_t bytes = recognized_.size() * 32;
    for (const auto& rt : runtimes_) bytes += rt->HeldBytes();
    return bytes;
  }

 private:
  struct Pending {
    uint32_t pid;
    uint64_t start;  // the mapping's start
    uint32_t tries = 0;
  };
  struct Recognized {
    uint64_t exited_ns = 0;  // when its exit was seen (0: live)
    bool in_sampler = false;  // its runtime reads at sample time (runtime_procs)
  };
  // Polls a mapping the symbolizer cannot give yet (its file not open, the
  // mapping not in the timeline yet) is asked for again.
  static constexpr uint32_t kMaxTries = 20;

  void RecognizePending(uint64_t now) {
    std::vector<Pending> again;
    for (const Pending& p : pending_) {
      if (!Recognize(p, now) && p.tries + 1 < kMaxTries) again.push_back({p.pid, p.start, p.tries + 1});
    }
    pending_ = std::move(again);
  }

  // False when the mapping's file cannot be had yet (asked again later).
  bool Recognize(const Pending& p, uint64_t now) {
    if (recognized_.count(p.pid) || symbolizer_->spaces().ProcessExited(p.pid)) return true;
    auto file = symbolizer_->spaces().FindMappedFile(p.pid, p.start, now);
    if (!file) return false;
    for (const auto& rt : runtimes_) {
      if (!rt->MayHost(file->path)) continue;
      const uint64_t t0 = MonotonicNs();
      auto proc = rt->Recognize(p.pid, *file);
      const uint64_t took = MonotonicNs() - t0;
      if (!proc) continue;
      // A runtime with nothing to read at sample time (Java) has no entry.
      const bool reads = proc->runtime != ARCPROF_RUNTIME_NONE;
      if (reads) {
        if (auto ok = sampler_->SetRuntimeProcess(p.pid, *proc); !ok) {
          spdlog::debug("{}", ok.error().message);
          return true;
        }
      }
      spdlog::debug("process {}: {} {:#x} ({}, recognized in {} ms)", p.pid, rt->name(), proc->version, file->path,
                    took / 1'000'000);
      recognized_.emplace(p.pid, Recognized{0, reads});
      return true;
    }
    return true;
  }

  RuntimeExtensionOptions options_;
  std::vector<std::unique_ptr<runtimes::Runtime>> runtimes_;
  JitSources jit_;  // after runtimes_: its listeners call them
  std::optional<runtimes::RuntimeHost> host_;
  Symbolizer* symbolizer_ = nullptr;
  Sampler* sampler_ = nullptr;
  SampleProcessor* processor_ = nullptr;
  std::vector<Pending> pending_;
  std::unordered_map<uint32_t, Recognized> recognized_;
};

}  // namespace

std::unique_ptr<RecordExtension> MakeRuntimeExtension(const RuntimeExtensionOptions& options) {
  return std::make_unique<RuntimeExtension>(options);
}

}  // namespace arcprof
