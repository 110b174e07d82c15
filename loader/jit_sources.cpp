#include "loader/jit_sources.h"

#include <signal.h>

#include <cerrno>
#include <utility>

#include <spdlog/fmt/fmt.h>

#include "common/text.h"
#include "symbolize/symbolizer.h"

namespace arcprof {
namespace {

// Sources of exited processes are let go this often: each holds the names of
// every method its process loaded (megabytes for a JVM); under a JVM
// restarted every few seconds a minute's worth of them was 50 MB of a
// daemon's heap. The symbolizer's own reference serves samples still in the
// ring until it forgets the process.
constexpr uint64_t kRetireEveryNs = 1'000'000'000;
// A warning line's most characters (paths come from /proc/PID/maps).
constexpr size_t kMaxWarning = 1000;

bool Gone(uint32_t pid) { return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// The Symbolizer owns its sources; the recording tails them too, so both
// hold the same object.
class SharedSource : public JitSymbolSource {
 public:
  explicit SharedSource(std::shared_ptr<JitProcessSource> source) : source_(std::move(source)) {}
  std::optional<JitSymbol> Find(uint64_t addr, uint64_t t_ns) override { return source_->Find(addr, t_ns); }
  std::optional<std::string_view> MethodName(uint64_t method, uint64_t t_ns) override {
    return source_->MethodName(method, t_ns);
  }
  size_t bytes() const override { return source_->bytes(); }

 private:
  std::shared_ptr<JitProcessSource> source_;
};

}  // namespace

void JitSources::Start(Symbolizer& symbolizer) {
  symbolizer_ = &symbolizer;
  symbolizer.SetJitSymbolSourceFactory([this](const ProcessInfo& process) {
    auto source = std::make_shared<JitProcessSource>(process);
    source->Poll(JitMonotonicNowNs());
    Report(*source);
    // It replaces the one of an earlier image (exec).
    if (auto old = sources_.find(process.pid); old != sources_.end()) {
      Close(process.pid, old->second, JitMonotonicNowNs());
      sources_.erase(old);
    }
    Entry& entry = sources_[process.pid];
    entry.source = source;
    opened_(process.pid, *source);
    return std::make_unique<SharedSource>(source);
  });
}

void JitSources::Poll(uint64_t now_ns) {
  for (auto& [pid, entry] : sources_) {
    entry.source->Poll(now_ns);
    Report(*entry.source);
  }
  if (now_ns - last_retire_ns_ < kRetireEveryNs) return;
  last_retire_ns_ = now_ns;
  CloseExited(now_ns);
}

void JitSources::CloseWindow(std::map<std::string, int64_t>& counters) {
  const uint64_t now = JitMonotonicNowNs();
  for (auto& [pid, entry] : sources_) {
    entry.source->Poll(now);
    Report(*entry.source);
    Account(entry);
  }
  const JitSourceStats delta = std::exchange(delta_, {});
  counters["jit.frame_records"] += static_cast<int64_t>(delta.frames);
  counters["jit.method_names"] += static_cast<int64_t>(delta.methods);
  counters["jit.code_loads"] += static_cast<int64_t>(delta.code_loads);
  counters["jit.code_unloads"] += static_cast<int64_t>(delta.unloads);
  counters["jit.inline_records"] += static_cast<int64_t>(delta.inline_records);
  counters["jit.perf_map_entries"] += static_cast<int64_t>(delta.perf_map_entries);
}

void JitSources::ForgetExited() { CloseExited(JitMonotonicNowNs()); }

void JitSources::CloseExited(uint64_t now_ns) {
  for (auto it = sources_.begin(); it != sources_.end();) {
    if (!Gone(it->first)) {
      ++it;
      continue;
    }
    Close(it->first, it->second, now_ns);
    it = sources_.erase(it);
  }
}

// What the window still needs of a source let go (its counters, what the
// runtimes take from it) is taken now.
void JitSources::Close(uint32_t pid, Entry& entry, uint64_t now_ns) {
  entry.source->Poll(now_ns);
  Report(*entry.source);
  Account(entry);
  closing_(pid, *entry.source);
}

void JitSources::Account(Entry& entry) {
  const JitSourceStats& s = entry.source->stats();
  delta_.code_loads += s.code_loads - entry.reported.code_loads;
  delta_.perf_map_entries += s.perf_map_entries - entry.reported.perf_map_entries;
  delta_.unloads += s.unloads - entry.reported.unloads;
  delta_.inline_records += s.inline_records - entry.reported.inline_records;
  delta_.frames += s.frames - entry.reported.frames;
  delta_.methods += s.methods - entry.reported.methods;
  entry.reported = s;
}

// A JIT source's warnings are about whatever runtime wrote the files (a perf
// map may come from python or node): they say "jit".
void JitSources::Report(JitProcessSource& source) {
  for (std::string& w : source.TakeWarnings()) {
    if (w.size() > kMaxWarning) w = w.substr(0, kMaxWarning) + "...";
    fputs(ErrorLine("", fmt::format("jit: pid {}: {}", source.pid(), w)).c_str(), stderr);
  }
}

}  // namespace arcprof
