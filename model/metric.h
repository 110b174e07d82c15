// --metric: which value of a call-tree node the views and exports read.
// A node counts samples (base) and, with record --off-cpu, nanoseconds off
// CPU (offcpu). The metrics:
//   samples  sampled ticks (the default; what every view showed before)
//   cpu      microseconds on CPU: each thread's samples share out the CPU time
//            PTT measured for it, or count one sampling interval each
//   offcpu   microseconds off CPU (blocked, sleeping or waiting for a CPU)
//   wall     cpu + offcpu: where a thread's wall-clock time went
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/profile.h"

namespace arcprof::model {

// The metric names, in the order above.
const std::vector<std::string>& MetricNames();

// Whether any node has off-CPU time.
bool HasOffCpu(const Profile& profile);

// A copy of `profile` whose node `base` is `metric` (unit in meta.unit, e.g.
// "wall-us"); "samples" returns it unchanged. One-line error for a name not
// in MetricNames() or for offcpu/wall of a capture without off-CPU time.
Result<Profile> WithMetric(const Profile& profile, std::string_view metric);

}  // namespace arcprof::model
