#include "model/metric.h"

#include <cmath>
#include <map>

namespace arcprof::model {

const std::vector<std::string>& MetricNames() {
  static const std::vector<std::string> names = {"samples", "cpu", "offcpu", "wall"};
  return names;
}

bool HasOffCpu(const Profile& profile) {
  for (const ThreadRecord& thread : profile.threads) {
    for (const CallTree::Node& node : thread.tree.nodes()) {
      if (node.offcpu > 0) return true;
    }
  }
  return false;
}

Result<Profile> WithMetric(const Profile& profile, std::string_view metric) {
  if (metric == "samples") return profile;
  const bool cpu = metric == "cpu" || metric == "wall";
  const bool offcpu = metric == "offcpu" || metric == "wall";
  if (!cpu && !offcpu) {
    std::string names;
    for (const std::string& n : MetricNames()) names += (names.empty() ? "" : ", ") + n;
    return MakeError("unknown metric '" + std::string(metric) + "'; use one of " + names);
  }
  if (offcpu && !HasOffCpu(profile)) {
    return MakeError("--metric " + std::string(metric) +
                     ": the capture has no off-CPU time (record with --off-cpu)");
  }
  // Each thread's samples share out the CPU time PTT measured for it
  // (interrupts excluded); threads PTT did not see count the sampling interval.
  std::map<uint64_t, uint64_t> ptt_cpu_ns;
  if (profile.ptt.recorded) {
    for (const PttThread& t : profile.ptt.threads) {
      ptt_cpu_ns[static_cast<uint64_t>(t.pid) << 32 | t.tid] += t.cpu_ns;
    }
  }
  const double interval_us =
      profile.meta.frequency_hz ? 1e6 / static_cast<double>(profile.meta.frequency_hz) : 1000.0;
  Profile out = profile;
  for (ThreadRecord& t : out.threads) {
    const uint64_t samples = t.tree.total_base();
    auto it = ptt_cpu_ns.find(static_cast<uint64_t>(t.pid) << 32 | t.tid);
    const double us_per_sample = it != ptt_cpu_ns.end() && samples > 0 && it->second > 0
                                     ? static_cast<double>(it->second) / 1000.0 / samples
                                     : interval_us;
    t.tree.TransformBase([&](const CallTree::Node& node) {
      uint64_t value = 0;
      if (cpu) value += static_cast<uint64_t>(std::llround(static_cast<double>(node.base) * us_per_sample));
      if (offcpu) value += (node.offcpu + 500) / 1000;
      return value;
    });
  }
  // The arcflow header prints this binding; the suffix after the last '-' is the scale.
  out.meta.unit = std::string(metric) + "-us";
  return out;
}

}  // namespace arcprof::model
