// `arcprof merge`: captures (or stores) of several machines into one capture.
//
// Every thread keeps the host it was recorded on (ThreadRecord::host), so
// every view puts the host above the process (host > process > thread >
// stack); the file holds one capture per host (docs/capture-format.md).
// With merge_hosts the hosts fold together: threads of equal (pid, tid) on
// different machines become one, whatever their processes' starts.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "model/profile.h"

namespace arcprof::store {

struct MergeResult {
  model::Profile profile;
  std::vector<std::string> notes;  // one line each: what was not carried over
};

// Reads every input (a capture file, checked as untrusted, or a continuous
// store directory: all its windows) and sums them with MergeProfile
// (model/profile_merge.h): call trees node by node per (host, pid, tid,
// process start: a pid reused by another process is another thread),
// counters by name, build ids by module, the time range is the union. Inputs
// must share the sampling event and frequency (their samples would not add up
// otherwise). An input that is itself a merge keeps its hosts. Per-thread time
// (PTT) is not carried over: its threads and intervals are per machine.
Result<MergeResult> MergeCaptures(const std::vector<std::string>& paths, bool merge_hosts);

}  // namespace arcprof::store
