// The loaded PTT program (bpf/ptt.bpf.c): skeleton, tp_btf links and the
// per-CPU counting perf events of --ptt-events. Move-only through unique_ptr;
// destroying it detaches everything (nothing is pinned).
#pragma once

#include <bpf/libbpf.h>

#include <cstdint>
#include <map>
#include <functional>
#include <memory>
#include <tuple>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/scoped_fd.h"
#include "loader/ptt_accounting.h"
#include "model/ptt_data.h"

struct ptt;

namespace arcprof {

struct PttRecorderOptions {
  std::vector<std::string> events;  // at most kPttMaxEvents names (loader/perf_events.h)
  uint32_t max_threads = 65536;     // entries of the thread map
  // Thread rows per window (0: no limit); past it the threads with the least
  // time are summed into one "[other threads]" row (FoldSmallestThreads).
  size_t max_window_rows = 0;
};

// Counters of things the recorder dropped or could not see.
struct PttRecorderCounters {
  uint64_t switches = 0;
  uint64_t threads_full = 0;  // switches whose thread did not fit in the map
  uint64_t dropped_ns = 0;
  uint64_t event_read_errors = 0;
  uint64_t unbalanced_irqs = 0;       // exits without an entry
  uint64_t open_hardirqs_at_switch = 0;  // entries without an exit, closed at a switch
  uint64_t open_softirqs_at_switch = 0;
  uint64_t unseen_switches = 0;
};

// "instructions,cycles" -> names; empty items dropped; errors (exit 1) for more
// than kPttMaxEvents, duplicates, or names ParseEvent does not know.
Result<std::vector<std::string>> ParsePttEvents(const std::string& list);

class PttRecorder {
 public:
  // Opens the counters, loads and attaches the programs, then makes every
  // online CPU switch once so that each CPU knows its running task.
  static Result<std::unique_ptr<PttRecorder>> Start(const PttRecorderOptions& options);
  ~PttRecorder();

  // Reads the per-CPU state and appends one interval row per CPU covering the
  // time since the previous snapshot.
  void Snapshot();
  // Takes a snapshot and returns what happened since the previous window (or
  // the start): per-thread time and counter deltas, the interval rows, and
  // interrupt vector deltas. Windows add up to the whole recording.
  model::PttData TakeWindow();
  // Detaches, then returns the last window (TakeWindow).
  model::PttData Finish();
  PttRecorderCounters ReadCounters() const;
  // Thread rows folded into "[other threads]" since the start.
  uint64_t rows_folded() const { return rows_folded_; }
  // About how many heap bytes it holds between windows (the previous
  // window's cumulative values of the threads still alive).
  size_t HeldBytes() const;
  // The events as recorded: unavailable ones keep their name and the reason.
  const std::vector<model::PttEvent>& events() const { return events_; }

 private:
  PttRecorder() = default;
  struct SkeletonDeleter {
    void operator()(::ptt* p) const;
  };
  struct LinkDeleter {
    void operator()(bpf_link* l) const;
  };

  Result<void> OpenEvents(const PttRecorderOptions& options);
  Result<void> Attach();
  Result<void> PrimeCpus();
  std::vector<ptt_cpu> ReadCpuStates() const;
  int EventFd(int slot, int cpu) const;  // the counting event of a BPF slot on a CPU
  // Every entry of the thread map, raw, in batches; `visit(key, value)`.
  void ForEachThreadEntry(const std::function<void(const ptt_thread_key&, const ptt_thread&)>& visit) const;
  // Every entry of the thread map; each row's raw key into *keys, in order.
  std::vector<model::PttThread> ReadThreads(std::vector<ptt_thread_key>* keys = nullptr) const;
  std::vector<model::PttIrqVector> ReadVectors() const;
  mutable size_t thread_entries_hint_ = 0;  // entries the last batched read found
  // `gone`: threads deleted from the map (sorted), kept in no baseline.
  void SinceLastWindow(model::PttData& data, const std::vector<std::tuple<uint32_t, uint32_t, uint64_t>>& gone);

  std::unique_ptr<::ptt, SkeletonDeleter> skel_;
  std::vector<std::unique_ptr<bpf_link, LinkDeleter>> links_;
  std::vector<ScopedFd> event_fds_;  // slot-major, cpus_ order; open while the maps refer to them
  std::vector<model::PttEvent> events_;
  std::vector<int> available_slot_of_event_;  // event index -> BPF slot, -1 when unavailable
  std::vector<int> cpus_;                     // online CPUs
  int possible_cpus_ = 0;
  std::vector<PttCpuTotals> last_totals_;     // per possible CPU
  uint64_t last_snapshot_ns_ = 0;
  std::vector<model::PttCpuInterval> intervals_;
  // What the previous window read, cumulative, for the next window's deltas:
  // sorted by (pid, tid, process start), each thread's events at
  // events_.size() * its index in window_events_. Flat, not a map of rows:
  // under process churn a window holds tens of thousands of threads.
  struct ThreadBaseline {
    std::tuple<uint32_t, uint32_t, uint64_t> key;
    uint64_t cpu_ns = 0, hardirq_ns = 0, softirq_ns = 0, dispatches = 0, interrupts = 0;
  };
  std::vector<ThreadBaseline> window_threads_;
  std::vector<uint64_t> window_events_;
  std::map<std::tuple<uint32_t, uint8_t, uint32_t>, std::pair<uint64_t, uint64_t>> window_vectors_;
  size_t max_window_rows_ = 0;
  uint64_t rows_folded_ = 0;
};

}  // namespace arcprof
