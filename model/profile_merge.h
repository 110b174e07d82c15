// Sums profiles: the windows of a continuous store into one range, or a window
// that could not be written yet into the next one.
#pragma once

#include "model/profile.h"

namespace arcprof::model {

// Adds `from` to `into`: frames are interned, threads matched by (host, pid,
// tid, process start) (host "" except in a merge of several machines,
// ThreadRecord::host; the start tells apart the processes that held a pid)
// (the later names win), trees summed node by node, counters summed by name,
// build ids united, PTT rows summed (threads by pid/tid, irq vectors by
// cpu/kind/vector; interval rows appended). The time range becomes the union:
// start_unix_ns is the earliest start, and end_monotonic_ns - start_monotonic_ns
// the span from the earliest start to the latest end. The other metadata is
// `into`'s, or `from`'s when `into` is empty.
void MergeProfile(Profile& into, const Profile& from);

// The end of a profile's time range in Unix time.
uint64_t EndUnixNs(const CaptureMeta& meta);

}  // namespace arcprof::model
