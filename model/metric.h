// --metric: the one selector of what the views and exports weigh a call-tree
// node by. A node holds n and one value per value type the profile declares
// (Profile::value_types: `samples` always, `offcpu` ns with record --off-cpu,
// counter deltas later); a metric is one declared type or a value derived
// from them:
//   samples  sampled ticks (the default; what every view showed before)
//   cpu      microseconds on CPU: each thread's samples share out the CPU time
//            PTT measured for it, or count one sampling interval each
//   offcpu   microseconds off CPU (blocked, sleeping or waiting for a CPU)
//   wall     cpu + offcpu: where a thread's wall-clock time went
// Any other declared value type is selected by its name, in its own unit; so
// are `cpu` and `wall` when the capture declares them (`arcprof trace`'s
// measured `wall` nanoseconds).
//
// A Metric is resolved once per report from the whole capture (its per-thread
// CPU time per sample comes from there) and then reads any profile cut from
// it (--root, --min, thread filters keep the threads' identity and the value
// types), one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/result.h"
#include "model/profile.h"

namespace arcprof::model {

// The built-in metric names, in the order above.
const std::vector<std::string>& MetricNames();

// Whether any node has off-CPU time.
bool HasOffCpu(const Profile& profile);

class Metric {
 public:
  // Samples (value type 0) in the profile's own unit (unit() is empty): what
  // a view reads when it is given no metric.
  Metric();
  // The metric `name` of `profile`. One-line error for an unknown name or for
  // offcpu/wall of a capture without off-CPU time.
  static Result<Metric> Select(const Profile& profile, std::string_view name);
  // The samples metric (value type 0, as it is), unit() the profile's.
  static Metric Samples(const Profile& profile);

  const std::string& name() const { return name_; }
  // The unit the views print: value type 0's name ("samples") for samples
  // ("" for Metric(): the unit of whichever profile it reads),
  // "<name>-us" for the time metrics (the suffix after the last '-' is the
  // scale the arcflow header shows), a declared type's own unit otherwise.
  const std::string& unit() const { return unit_; }
  // The same metric printed under another unit name (arcflow --units ms
  // with PTT calls measured CPU time "ptt-cpu-us").
  Metric WithUnit(std::string unit) const;

  // The metric's value of every node of `thread`'s tree, indexed by node.
  std::vector<uint64_t> Values(const ThreadRecord& thread) const;
  // Σ Values(thread).
  uint64_t Total(const ThreadRecord& thread) const;

  // The same metric in nanoseconds instead of microseconds (the time
  // metrics; any other metric is returned as it is), unit "<name>-ns": what
  // pprof carries, with the same per-thread CPU time as the views.
  Metric InNanoseconds() const;
  // cpu and wall: whether `thread`'s CPU time is what PTT measured for it
  // (false: its samples count one sampling interval each).
  bool CpuMeasured(const ThreadRecord& thread) const;

 private:
  struct Term {
    size_t type = 0;          // value type index
    bool per_sample = false;  // times the thread's microseconds per sample
    uint64_t divisor = 1;     // rounded division (ns -> us)
  };
  using ThreadKey = std::tuple<std::string, uint32_t, uint32_t, uint64_t>;  // host, pid, tid, process start
  double UsPerSample(const ThreadRecord& thread) const;
  // The metric's value of one node, `us_per_sample` being UsPerSample(its thread).
  uint64_t NodeValue(const CallTree& tree, uint32_t node, double us_per_sample) const;

  std::string name_;
  std::string unit_;
  std::vector<Term> terms_;
  // cpu and wall: each thread's CPU microseconds per sample, and the sampling
  // interval for threads PTT did not measure.
  std::map<ThreadKey, double> us_per_sample_;
  double interval_us_ = 1000.0;
  // 1000 InNanoseconds(): the per-sample terms' scale.
  double per_sample_scale_ = 1.0;
};

}  // namespace arcprof::model
