#include "loader/ptt_extension.h"
#include "common/clock.h"

#include <time.h>

#include <cstdio>
#include <map>
#include <tuple>
#include <unordered_map>

#include "loader/ptt_accounting.h"
#include "loader/ptt_recorder.h"
#include "loader/record.h"
#include "model/profile.h"
#include "spaces/address_spaces.h"
#include "spaces/process_registry.h"
#include "symbolize/symbolizer.h"
#include "common/text.h"

namespace arcprof {
using namespace arcprof::model;
namespace {

class PttExtension final : public RecordExtension {
 public:
  explicit PttExtension(PttExtensionOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "ptt"; }

  Result<void> Start(RecordContext& context) override {
    auto events = ParsePttEvents(options_.events);
    if (!events) return events.error();
    PttRecorderOptions recorder_options;
    recorder_options.events = std::move(*events);
    recorder_options.max_threads = options_.max_threads;
    recorder_options.max_window_rows = options_.max_window_rows;
    auto recorder = PttRecorder::Start(recorder_options);
    if (!recorder) return recorder.error();
    recorder_ = std::move(*recorder);
    interval_ns_ = static_cast<uint64_t>(options_.interval_ms) * 1000000ull;
    last_snapshot_ns_ = MonotonicNs();
    if (!options_.quiet) {
      for (const PttEvent& e : recorder_->events()) {
        if (!e.available) fprintf(stderr, "arcprof: ptt: %s: %s\n", EscapeControl(e.name).c_str(), EscapeControl(e.unavailable_reason).c_str());
      }
    }
    return {};
  }

  void Poll(RecordContext&) override {
    const uint64_t now = MonotonicNs();
    if (now - last_snapshot_ns_ + 1000000ull < interval_ns_) return;  // 1 ms of poll jitter
    recorder_->Snapshot();
    last_snapshot_ns_ = now;
  }

  size_t HeldBytes() const override { return recorder_ ? recorder_->HeldBytes() : 0; }

  Result<void> CloseWindow(RecordContext& context, Profile& profile, bool last) override {
    if (!recorder_) return {};
    PttData data = last ? recorder_->Finish() : recorder_->TakeWindow();
    const PttRecorderCounters total = recorder_->ReadCounters();
    const uint64_t folded = recorder_->rows_folded() - reported_folded_;
    reported_folded_ = recorder_->rows_folded();
    if (last) recorder_.reset();
    // The BPF counters count from the start; a window stores its share.
    PttRecorderCounters counters = total;
    counters.switches -= reported_.switches;
    counters.threads_full -= reported_.threads_full;
    counters.dropped_ns -= reported_.dropped_ns;
    counters.event_read_errors -= reported_.event_read_errors;
    counters.unbalanced_irqs -= reported_.unbalanced_irqs;
    counters.open_hardirqs_at_switch -= reported_.open_hardirqs_at_switch;
    counters.open_softirqs_at_switch -= reported_.open_softirqs_at_switch;
    counters.unseen_switches -= reported_.unseen_switches;
    reported_ = total;
    // PTT copies a thread's name when it first sees the thread, which can be
    // before the thread names itself (prctl PR_SET_NAME); the samples carry the
    // name the thread had when it ran, so they win where there are any.
    // A thread's row and its record are one thread of one process: (pid,
    // tid, process start). The records' starts that a fork's time made one
    // tick late take the kernel's, here and in the process registry (so the
    // next windows' records have it too).
    for (const StartCorrection& c : AlignProcessStarts(profile.threads, data.threads, StartNsOfTicks(1))) {
      context.symbolizer.spaces().CorrectStart(c.pid, c.late_ns, c.start_ns);
    }
    std::map<std::tuple<uint32_t, uint32_t, uint64_t>, const std::string*> sampled_names;
    for (const ThreadRecord& t : profile.threads) {
      if (!t.comm.empty()) sampled_names[{t.pid, t.tid, t.process_start_ns}] = &t.comm;
    }
    for (PttThread& t : data.threads) {
      auto it = sampled_names.find({t.pid, t.tid, t.process_start_ns});
      if (it != sampled_names.end()) t.comm = *it->second;
    }
    profile.ptt = std::move(data);
    profile.counters["ptt_switches"] = static_cast<int64_t>(counters.switches);
    profile.counters["ptt_threads_dropped"] = static_cast<int64_t>(counters.threads_full);
    if (folded > 0) profile.counters["ptt_threads_folded"] = static_cast<int64_t>(folded);
    profile.counters["ptt_dropped_ns"] = static_cast<int64_t>(counters.dropped_ns);
    profile.counters["ptt_event_read_errors"] = static_cast<int64_t>(counters.event_read_errors);
    profile.counters["ptt_unbalanced_irqs"] = static_cast<int64_t>(counters.unbalanced_irqs);
    profile.counters["ptt_open_hardirqs_at_switch"] =
        static_cast<int64_t>(counters.open_hardirqs_at_switch);
    profile.counters["ptt_open_softirqs_at_switch"] =
        static_cast<int64_t>(counters.open_softirqs_at_switch);
  profile.counters["ptt_unseen_switches"] = static_cast<int64_t>(counters.unseen_switches);
    if (counters.threads_full > 0) {
      fprintf(stderr,
              "arcprof: ptt: %llu context switches of threads that did not fit in the thread "
              "map were not attributed: raise --ptt-max-threads\n",
              static_cast<unsigned long long>(counters.threads_full));
    }
    return {};
  }

 private:
  const PttExtensionOptions options_;
  std::unique_ptr<PttRecorder> recorder_;
  uint64_t interval_ns_ = 100000000ull;
  uint64_t last_snapshot_ns_ = 0;
  PttRecorderCounters reported_;  // totals at the previous window
  uint64_t reported_folded_ = 0;
};

}  // namespace

bool PttEnabled(const RecordOptions& options) {
  if (options.ptt.has_value()) return *options.ptt;
  return options.command.empty() && options.pids.empty();
}

PttExtensionOptions PttExtensionOptionsOf(const RecordOptions& options) {
  PttExtensionOptions out;
  out.events = options.ptt_events;
  out.interval_ms = options.ptt_interval_ms;
  out.max_threads = options.ptt_max_threads;
  out.max_window_rows = options.ptt_max_window_rows;
  out.quiet = options.quiet;
  return out;
}

std::unique_ptr<RecordExtension> MakePttExtension(PttExtensionOptions options) {
  return std::make_unique<PttExtension>(std::move(options));
}

}  // namespace arcprof
