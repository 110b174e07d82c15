// What native and Java traces share when they put their call tree into the
// capture: the sampled path above the root, and the names of a thread that
// only the trace saw.
#pragma once

#include <cstdint>
#include <vector>

#include "model/profile.h"

namespace arcprof {

struct RecordContext;

// The sampled path above the root in `thread` (frames root first, the root's
// own frame excluded): the outermost root node with the most samples under
// it. is_root[frame] marks the root's frames.
std::vector<uint32_t> SampledPathAbove(const model::ThreadRecord& thread, const std::vector<uint8_t>& is_root);

// The same for the trace of thread `tid` of `pid` (window.ThreadIndex made
// when new, then named): its own samples' path, else any thread's of pid.
struct TraceThread {
  uint32_t index = 0;              // into window.threads
  std::vector<uint32_t> context;   // frames above the root
};
TraceThread TraceThreadOf(RecordContext& context, model::Profile& window, uint32_t pid, uint32_t tid,
                          const std::vector<uint8_t>& is_root);

// Totals of a trace's nodes, for its counters and last words.
struct TraceTotals {
  uint64_t measured = 0;  // self ns as measured
  uint64_t removed = 0;   // ns the calibration took out
  double estimated = 0;   // ns the calibration would take out, each node's take in full
  uint64_t calls = 0;
  uint64_t unreturned = 0;
};

// Adds one traced node's values to `node` of `tree`: its calls, and its self
// time less `take` (the probes' calibrated cost, never below zero). Returns
// the ns taken out.
uint64_t AddTraceValues(model::CallTree& tree, uint32_t node, size_t calls_type, size_t wall_type, uint64_t calls,
                        uint64_t self_ns, uint64_t unreturned, double take, TraceTotals* totals);

}  // namespace arcprof
