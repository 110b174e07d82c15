#include "loader/runtime_extension.h"

#include <sys/mman.h>

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/clock.h"
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
  ~RuntimeExtension() override {
    if (symbolizer_) symbolizer_->spaces().SetMappingObserver(this, nullptr);
    if (symbolizer_) symbolizer_->SetJitFrameRefiner(this, nullptr);
    if (processor_) processor_->SetRuntimes({});
  }

  std::string_view name() const override { return "runtimes"; }

  Result<void> Start(RecordContext& context) override {
    if (context.sampler == nullptr || context.processor == nullptr) return {};
    runtimes_ = runtimes::MakeRuntimes();
    symbolizer_ = &context.symbolizer;
    sampler_ = context.sampler;
    processor_ = context.processor;
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
    return {};
  }

  void Poll(RecordContext& context) override {
    const uint64_t now = MonotonicNs();
    RecognizePending(now);
    // Exited processes leave the BPF map at once and their names a little later.
    for (auto it = recognized_.begin(); it != recognized_.end();) {
      const uint32_t pid = it->first;
      if (it->second == 0 && symbolizer_->spaces().ProcessExited(pid)) {
        sampler_->RemoveRuntimeProcess(pid);
        it->second = now;
      }
      if (it->second != 0 && now - it->second > kForgetAfterExitNs) {
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
    for (const auto& rt : runtimes_) {
      rt->TakeCounters([&window](std::string_view name, int64_t v) { window.counters[std::string(name)] += v; });
    }
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
      if (auto ok = sampler_->SetRuntimeProcess(p.pid, *proc); !ok) {
        spdlog::debug("{}", ok.error().message);
        return true;
      }
      spdlog::debug("process {}: {} {:#x} ({}, recognized in {} ms)", p.pid, rt->name(), proc->version, file->path,
                    took / 1'000'000);
      recognized_.emplace(p.pid, 0);
      return true;
    }
    return true;
  }

  std::vector<std::unique_ptr<runtimes::Runtime>> runtimes_;
  Symbolizer* symbolizer_ = nullptr;
  Sampler* sampler_ = nullptr;
  SampleProcessor* processor_ = nullptr;
  std::vector<Pending> pending_;
  std::unordered_map<uint32_t, uint64_t> recognized_;  // pid -> when its exit was seen (0: live)
};

}  // namespace

std::unique_ptr<RecordExtension> MakeRuntimeExtension() {
  return std::make_unique<RuntimeExtension>();
}

}  // namespace arcprof
