#include "model/metric.h"
#include "model/value_types.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace arcprof::model {

const std::vector<std::string>& MetricNames() {
  static const std::vector<std::string> names = {"samples", "cpu", std::string(kOffCpuNs.name), "wall"};
  return names;
}

bool HasOffCpu(const Profile& profile) {
  const auto type = profile.ValueIndex(kOffCpuNs.name);
  if (!type) return false;
  for (const ThreadRecord& thread : profile.threads) {
    if (thread.tree.total(*type) > 0) return true;
  }
  return false;
}

Metric::Metric() : name_("samples"), terms_{Term{kSamplesValue, false, 1}} {}

Metric Metric::Samples(const Profile& profile) {
  Metric m;
  m.unit_ = profile.value_types[kSamplesValue].name;
  return m;
}

Result<Metric> Metric::Select(const Profile& profile, std::string_view name) {
  if (name == "samples") return Samples(profile);
  Metric m;
  m.name_ = std::string(name);
  m.terms_.clear();
  // A capture that declares a value type by the name of a derived metric
  // (`arcprof trace` declares `wall`, measured per call) is read as declared.
  if (name == "cpu" || name == "wall") {
    if (auto type = profile.ValueIndex(name); type && *type != kSamplesValue) {
      m.unit_ = profile.value_types[*type].unit;
      m.terms_.push_back(Term{*type, false, 1});
      return m;
    }
  }
  const bool cpu = name == "cpu" || name == "wall";
  const bool offcpu = name == kOffCpuNs.name || name == "wall";
  if (!cpu && !offcpu) {
    // Any other value type the capture declares, as it is.
    if (auto type = profile.ValueIndex(name); type && *type != kSamplesValue) {
      m.unit_ = profile.value_types[*type].unit;
      m.terms_.push_back(Term{*type, false, 1});
      return m;
    }
    std::string names;
    for (const std::string& n : MetricNames()) names += (names.empty() ? "" : ", ") + n;
    for (size_t type = 1; type < profile.value_types.size(); ++type) {
      const std::string& declared = profile.value_types[type].name;
      if (std::find(MetricNames().begin(), MetricNames().end(), declared) == MetricNames().end()) {
        names += ", " + declared;
      }
    }
    return MakeError("unknown metric '" + std::string(name) + "'; use one of " + names);
  }
  if (offcpu && !HasOffCpu(profile)) {
    return MakeError("--metric " + std::string(name) +
                     ": the capture has no off-CPU time (record with --off-cpu)");
  }
  if (cpu) {
    m.terms_.push_back(Term{kSamplesValue, true, 1});
    m.interval_us_ =
        profile.meta.frequency_hz ? 1e6 / static_cast<double>(profile.meta.frequency_hz) : 1000.0;
    // Each thread's samples share out the CPU time PTT measured for it
    // (interrupts excluded); threads PTT did not see count the sampling interval.
    // A thread's row and record are those of one process: (pid, tid, process
    // start). Rows without a start (captures before schema 9) join by (pid, tid).
    std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint64_t> ptt_cpu_ns;
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> unknown_start_cpu_ns;
    if (profile.ptt.recorded) {
      for (const PttThread& t : profile.ptt.threads) {
        ptt_cpu_ns[{t.pid, t.tid, t.process_start_ns}] += t.cpu_ns;
        if (t.process_start_ns == 0) unknown_start_cpu_ns[{t.pid, t.tid}] += t.cpu_ns;
      }
    }
    for (const ThreadRecord& t : profile.threads) {
      uint64_t cpu_ns = 0;
      if (auto it = ptt_cpu_ns.find({t.pid, t.tid, t.process_start_ns}); it != ptt_cpu_ns.end()) {
        cpu_ns = it->second;
      } else if (auto old = unknown_start_cpu_ns.find({t.pid, t.tid}); old != unknown_start_cpu_ns.end()) {
        cpu_ns = old->second;
      }
      const uint64_t samples = t.tree.total(kSamplesValue);
      if (samples == 0 || cpu_ns == 0) continue;
      m.us_per_sample_[{t.host, t.pid, t.tid, t.process_start_ns}] = static_cast<double>(cpu_ns) / 1000.0 / samples;
    }
  }
  if (offcpu) m.terms_.push_back(Term{*profile.ValueIndex(kOffCpuNs.name), false, 1000});
  m.unit_ = m.name_ + "-us";
  return m;
}

Metric Metric::WithUnit(std::string unit) const {
  Metric m = *this;
  m.unit_ = std::move(unit);
  return m;
}

Metric Metric::InNanoseconds() const {
  if (name_ != "cpu" && name_ != kOffCpuNs.name && name_ != "wall") return *this;
  Metric m = *this;
  m.per_sample_scale_ = 1000.0;
  for (Term& term : m.terms_) {
    if (!term.per_sample) term.divisor = term.divisor >= 1000 ? term.divisor / 1000 : 1;
  }
  m.unit_ = m.name_ + "-ns";
  return m;
}

bool Metric::CpuMeasured(const ThreadRecord& thread) const {
  return us_per_sample_.count({thread.host, thread.pid, thread.tid, thread.process_start_ns}) != 0;
}

double Metric::UsPerSample(const ThreadRecord& thread) const {
  auto it = us_per_sample_.find({thread.host, thread.pid, thread.tid, thread.process_start_ns});
  return it == us_per_sample_.end() ? interval_us_ : it->second;
}

uint64_t Metric::NodeValue(const CallTree& tree, uint32_t node, double us_per_sample) const {
  uint64_t out = 0;
  for (const Term& term : terms_) {
    const uint64_t v = tree.value(node, term.type);
    if (v == 0) continue;
    if (term.per_sample) {
      out += static_cast<uint64_t>(std::llround(static_cast<double>(v) * us_per_sample * per_sample_scale_));
    } else {
      out += (v + term.divisor / 2) / term.divisor;
    }
  }
  return out;
}

std::vector<uint64_t> Metric::Values(const ThreadRecord& thread) const {
  const double us_per_sample = UsPerSample(thread);
  std::vector<uint64_t> out(thread.tree.size());
  for (uint32_t i = 0; i < out.size(); ++i) out[i] = NodeValue(thread.tree, i, us_per_sample);
  return out;
}

uint64_t Metric::Total(const ThreadRecord& thread) const {
  // Summed node by node (each node rounded as in Values), without the vector.
  const double us_per_sample = UsPerSample(thread);
  uint64_t total = 0;
  for (uint32_t i = 0; i < thread.tree.size(); ++i) total += NodeValue(thread.tree, i, us_per_sample);
  return total;
}

}  // namespace arcprof::model
