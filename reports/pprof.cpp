#include "reports/pprof.h"
#include "model/value_types.h"

#include "model/frame_name.h"

#include "model/metric.h"

#include <zlib.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "proto/profile.pb.h"
#include "reports/export_text.h"
#include "reports/profile_samples.h"

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

namespace pb = perftools::profiles;

class StringTable {
 public:
  explicit StringTable(pb::Profile& profile) : profile_(profile) { Index(""); }
  int64_t Index(const std::string& s) {
    auto [it, inserted] = index_.try_emplace(s, static_cast<int64_t>(index_.size()));
    if (inserted) profile_.add_string_table(s);
    return it->second;
  }

 private:
  pb::Profile& profile_;
  std::unordered_map<std::string, int64_t> index_;
};

class PprofBuilder {
 public:
  PprofBuilder(const Profile& profile, pb::Profile& out)
      : profile_(profile), out_(out), strings_(out), function_of_frame_(profile.frames.size(), 0),
        mapping_of_frame_(profile.frames.size(), kUnset), locations_(profile.frames.size()) {}

  // The location of the group of frames `frames` (leaf first; all but the
  // last inlined into the next). Ids start at 1.
  uint64_t Location(const std::vector<uint32_t>& frames) {
    return locations_.Get(frames, [this](const std::vector<uint32_t>& f) { return NewLocation(f); });
  }

  void FinishMappings() {
    for (auto& [name, range] : mapping_ranges_) {
      pb::Mapping* m = out_.mutable_mapping(static_cast<int>(range.index));
      m->set_memory_start(range.low);
      m->set_memory_limit(range.high + 1);
      m->set_has_inline_frames(range.inlined);
    }
  }

  StringTable& strings() { return strings_; }

  // pprof takes mapping[0] as the main binary: create the mapping of this frame first.
  void CreateMappingFirst(uint32_t frame_id) { MappingId(frame_id); }

 private:
  static constexpr uint64_t kUnset = ~0ull;
  struct Range {
    size_t index = 0;
    uint64_t low = ~0ull;
    uint64_t high = 0;
    bool inlined = false;
  };

  uint64_t FunctionId(uint32_t frame_id) {
    uint64_t& id = function_of_frame_[frame_id];
    if (id != 0) return id;
    const std::string name = ExportFunctionName(profile_.frames, frame_id);
    const std::string file = ExportSourceFile(profile_.frames, profile_.frames.at(frame_id));
    auto [it, inserted] = function_by_name_.try_emplace(file.empty() ? name : name + '\0' + file, 0);
    if (inserted) {
      pb::Function* f = out_.add_function();
      it->second = static_cast<uint64_t>(out_.function_size());
      f->set_id(it->second);
      f->set_name(strings_.Index(name));
      f->set_system_name(f->name());
      if (!file.empty()) f->set_filename(strings_.Index(file));
    }
    id = it->second;
    return id;
  }

  // 0 = no mapping.
  uint64_t MappingId(uint32_t frame_id) {
    uint64_t& id = mapping_of_frame_[frame_id];
    if (id != kUnset) return id;
    const std::string name = ExportMappingName(profile_.frames, profile_.frames.at(frame_id));
    if (name.empty()) return id = 0;
    auto [it, inserted] = mapping_ranges_.try_emplace(name);
    if (inserted) {
      pb::Mapping* m = out_.add_mapping();
      it->second.index = static_cast<size_t>(out_.mapping_size() - 1);
      m->set_id(static_cast<uint64_t>(out_.mapping_size()));
      m->set_filename(strings_.Index(ValidUtf8(name)));
      auto build_id = profile_.build_ids.find(name);
      m->set_build_id(
          strings_.Index(build_id == profile_.build_ids.end() ? "" : build_id->second));
      // Every location carries its function: pprof must not re-symbolize
      // (native addresses are symbol starts relative to the file).
      m->set_has_functions(true);
    }
    id = out_.mapping(static_cast<int>(it->second.index)).id();
    return id;
  }

  uint64_t NewLocation(const std::vector<uint32_t>& frames) {
    pb::Location* loc = out_.add_location();
    const uint64_t id = static_cast<uint64_t>(out_.location_size());
    loc->set_id(id);
    const uint32_t physical = frames.back();
    const FrameRecord& frame = profile_.frames.at(physical);
    loc->set_address(ExportAddress(frame));
    const uint64_t mapping = MappingId(physical);
    loc->set_mapping_id(mapping);
    if (mapping != 0) {
      Range& range = mapping_ranges_[ExportMappingName(profile_.frames, frame)];
      range.low = std::min(range.low, frame.address);
      range.high = std::max(range.high, frame.address);
      range.inlined = range.inlined || frames.size() > 1;
    }
    for (uint32_t f : frames) {
      pb::Line* line = loc->add_line();
      line->set_function_id(FunctionId(f));
      line->set_line(ExportSourceLine(profile_.frames.at(f)));
    }
    return id;
  }

  const Profile& profile_;
  pb::Profile& out_;
  StringTable strings_;
  std::vector<uint64_t> function_of_frame_;
  std::vector<uint64_t> mapping_of_frame_;
  LocationIds locations_;
  std::unordered_map<std::string, uint64_t> function_by_name_;
  std::map<std::string, Range> mapping_ranges_;
};

void AddLabel(pb::Sample* sample, int64_t key, int64_t str) {
  pb::Label* label = sample->add_label();
  label->set_key(key);
  label->set_str(str);
}

}  // namespace

std::string EncodePprof(const Profile& profile, const ThreadFilter& filter,
                        const std::string& default_metric, const Metric* cpu_metric, PprofLabels labels) {
  return EncodePprof(profile, SelectThreads(profile, filter), default_metric, cpu_metric, labels);
}

std::string EncodePprof(const Profile& profile, std::span<const ThreadRecord* const> selected,
                        const std::string& default_metric, const Metric* cpu_metric, PprofLabels labels) {
  const bool all_labels = labels == PprofLabels::kAll;
  const SampleSchema schema = DescribeSamples(profile, cpu_metric);
  const Metric& cpu = schema.cpu;
  pb::Profile out;
  PprofBuilder builder(profile, out);
  StringTable& strings = builder.strings();

  const uint64_t frequency = schema.frequency_hz;
  const int64_t period = schema.period_ns;
  for (const ValueType& type : schema.types) {
    pb::ValueType* t = out.add_sample_type();
    t->set_type(strings.Index(type.name));
    t->set_unit(strings.Index(type.unit));
  }
  if (default_metric != "samples") {
    out.set_default_sample_type(strings.Index(std::string(PprofTypeName(default_metric))));
  }
  out.mutable_period_type()->set_type(strings.Index("cpu"));
  out.mutable_period_type()->set_unit(strings.Index("nanoseconds"));
  out.set_period(period);
  out.set_time_nanos(static_cast<int64_t>(profile.meta.start_unix_ns));
  if (profile.meta.end_monotonic_ns > profile.meta.start_monotonic_ns) {
    out.set_duration_nanos(static_cast<int64_t>(profile.meta.end_monotonic_ns - profile.meta.start_monotonic_ns));
  }
  const auto comment = [&](const std::string& text) {
    if (!text.empty()) out.add_comment(strings.Index(ValidUtf8(text)));
  };
  comment("arcprof " + profile.meta.arcprof_version + ", " + profile.meta.event + " at " +
          std::to_string(frequency) + " Hz");
  if (!profile.meta.target.empty()) comment("target: " + profile.meta.target);
  if (!profile.meta.host.empty()) comment("host: " + profile.meta.host);
  {
    size_t measured = 0, sampled = 0;
    for (const ThreadRecord* thread : selected) {
      if (thread->tree.total(kSamplesValue) == 0) continue;
      ++sampled;
      if (cpu.CpuMeasured(*thread)) ++measured;
    }
    const std::string per_sample = "samples x " + std::to_string(period) + " ns";
    if (measured == 0) {
      comment("cpu: " + per_sample + " (no per-thread CPU time (PTT) in this capture)");
    } else {
      comment("cpu: per-thread CPU time measured by PTT, shared out over each thread's samples, for " +
              std::to_string(measured) + " of " + std::to_string(sampled) + " threads" +
              (measured < sampled ? "; " + per_sample + " for the others" : std::string()) +
              " (as report --metric cpu)");
    }
  }

  const int64_t key_pid = all_labels ? strings.Index("pid") : 0;
  const int64_t key_tid = all_labels ? strings.Index("tid") : 0;
  const int64_t key_comm = strings.Index("comm");
  const int64_t key_thread_name = all_labels ? strings.Index("thread_name") : 0;
  const int64_t key_host = profile.multi_host() ? strings.Index("host") : 0;
  // The process's identity, with OpenTelemetry's semantic-convention names;
  // keys only when some selected thread has the value.
  int64_t key_container = 0, key_pod = 0, key_service = 0, key_ns_pid = 0;
  for (const ThreadRecord* thread : selected) {
    if (!all_labels) break;
    const ProcessIdentity& id = thread->identity;
    if (!id.container_id.empty() && key_container == 0) key_container = strings.Index("container.id");
    if (!id.pod_uid.empty() && key_pod == 0) key_pod = strings.Index("k8s.pod.uid");
    if (!id.service_name.empty() && key_service == 0) key_service = strings.Index("service.name");
    if (id.ns_pid != 0 && id.ns_pid != thread->pid && key_ns_pid == 0) key_ns_pid = strings.Index("ns_pid");
  }

  {
    // The main binary: the user-space module with the most samples at the leaf.
    std::map<std::string, std::pair<uint64_t, uint32_t>> leaf_samples;  // module -> (samples, a frame)
    for (const ThreadRecord* thread : selected) {
      const CallTree& tree = thread->tree;
      for (uint32_t i = 0; i < tree.size(); ++i) {
        const CallTree::Node& node = tree.nodes()[i];
        const uint64_t samples = tree.value(i, kSamplesValue);
        if (samples == 0 || node.frame >= profile.frames.size()) continue;
        const FrameRecord& frame = profile.frames.at(node.frame);
        if (frame.kind != FrameKind::kNative || frame.module == 0) continue;
        auto& entry = leaf_samples[profile.frames.module_of(frame)];
        entry.first += samples;
        entry.second = node.frame;
      }
    }
    const std::pair<uint64_t, uint32_t>* best = nullptr;
    for (const auto& [module, entry] : leaf_samples) {
      if (best == nullptr || entry.first > best->first) best = &entry;
    }
    if (best != nullptr) builder.CreateMappingFirst(best->second);
  }

  // The comm label's string, looked up once per thread rather than per sample.
  const ThreadRecord* comm_thread = nullptr;
  int64_t comm_str = 0;
  const auto comm_of = [&](const ThreadRecord& thread) {
    if (&thread != comm_thread) {
      comm_thread = &thread;
      comm_str = strings.Index(ValidUtf8(ProcessName(thread)));
    }
    return comm_str;
  };
  ForEachSample(
      profile, selected, schema, [&](const std::vector<uint32_t>& frames) { return builder.Location(frames); },
      [&](const ThreadRecord& thread, std::span<const uint64_t> locations, std::span<const int64_t> values) {
        pb::Sample* sample = out.add_sample();
        for (uint64_t location : locations) sample->add_location_id(location);
        for (int64_t value : values) sample->add_value(value);
        if (!all_labels) {
          AddLabel(sample, key_comm, comm_of(thread));
          if (key_host != 0 && !thread.host.empty()) AddLabel(sample, key_host, strings.Index(ValidUtf8(thread.host)));
          return;
        }
        pb::Label* pid = sample->add_label();
        pid->set_key(key_pid);
        pid->set_num(thread.pid);
        pb::Label* tid = sample->add_label();
        tid->set_key(key_tid);
        tid->set_num(thread.tid);
        AddLabel(sample, key_comm, comm_of(thread));
        if (!thread.comm.empty()) AddLabel(sample, key_thread_name, strings.Index(ValidUtf8(thread.comm)));
        if (key_host != 0 && !thread.host.empty()) AddLabel(sample, key_host, strings.Index(ValidUtf8(thread.host)));
        const ProcessIdentity& identity = thread.identity;
        if (!identity.container_id.empty()) {
          AddLabel(sample, key_container, strings.Index(ValidUtf8(identity.container_id)));
        }
        if (!identity.pod_uid.empty()) AddLabel(sample, key_pod, strings.Index(ValidUtf8(identity.pod_uid)));
        if (!identity.service_name.empty()) {
          AddLabel(sample, key_service, strings.Index(ValidUtf8(identity.service_name)));
        }
        if (key_ns_pid != 0 && identity.ns_pid != 0 && identity.ns_pid != thread.pid) {
          pb::Label* ns_pid = sample->add_label();
          ns_pid->set_key(key_ns_pid);
          ns_pid->set_num(identity.ns_pid);
        }
      });
  builder.FinishMappings();
  std::string bytes;
  out.SerializeToString(&bytes);
  return bytes;
}

Result<std::string> Gzip(std::string_view bytes, int level) {
  if (bytes.size() > 0xffffffffu) return MakeError("gzip: profile larger than 4 GiB; narrow it with --pid, --root or --min");
  z_stream stream{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (level < Z_BEST_SPEED || level > Z_BEST_COMPRESSION) return MakeError("gzip: level outside 1-9");
  if (deflateInit2(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return MakeError("gzip: cannot initialise zlib");
  }
  std::string out;
  out.resize(deflateBound(&stream, bytes.size()) + 32);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&stream, Z_FINISH);
  const size_t written = stream.total_out;
  deflateEnd(&stream);
  if (rc != Z_STREAM_END) return MakeError("gzip: compression failed");
  out.resize(written);
  return out;
}

Result<std::string> PprofFile(const Profile& profile, const ThreadFilter& filter,
                              const std::string& default_metric, const Metric* cpu) {
  return Gzip(EncodePprof(profile, filter, default_metric, cpu));
}

}  // namespace arcprof::reports
