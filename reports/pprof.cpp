#include "reports/pprof.h"

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

// The name pprof shows: the frame's display name, as every view shows it.
std::string FunctionName(const FrameTable& frames, uint32_t id) { return ValidUtf8(FrameDisplayName(frames, id)); }

// Kernel frames share pprof's conventional kernel mapping name; JIT and
// interpreted code and frames without a module have no mapping.
std::string MappingName(const FrameTable& frames, const FrameRecord& frame) {
  if (frame.kind == FrameKind::kJit || frame.kind == FrameKind::kInterpreted) return "";
  const std::string& module = frames.module_of(frame);
  if (frame.kind == FrameKind::kKernel) {
    return module == "vmlinux" || module.empty() ? "[kernel.kallsyms]" : "[" + module + "]";
  }
  return module;
}

class PprofBuilder {
 public:
  PprofBuilder(const Profile& profile, pb::Profile& out)
      : profile_(profile), out_(out), strings_(out), function_of_frame_(profile.frames.size(), 0),
        mapping_of_frame_(profile.frames.size(), kUnset), single_location_(profile.frames.size(), 0) {}

  // The location of the group of frames `frames` (leaf first; all but the
  // last inlined into the next). Ids start at 1.
  uint64_t Location(const std::vector<uint32_t>& frames) {
    if (frames.size() == 1) {
      uint64_t& id = single_location_[frames[0]];
      if (id == 0) id = NewLocation(frames);
      return id;
    }
    auto [it, inserted] = multi_location_.try_emplace(frames, 0);
    if (inserted) it->second = NewLocation(frames);
    return it->second;
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
    const std::string name = FunctionName(profile_.frames, frame_id);
    auto [it, inserted] = function_by_name_.try_emplace(name, 0);
    if (inserted) {
      pb::Function* f = out_.add_function();
      it->second = static_cast<uint64_t>(out_.function_size());
      f->set_id(it->second);
      f->set_name(strings_.Index(name));
      f->set_system_name(f->name());
    }
    id = it->second;
    return id;
  }

  // 0 = no mapping.
  uint64_t MappingId(uint32_t frame_id) {
    uint64_t& id = mapping_of_frame_[frame_id];
    if (id != kUnset) return id;
    const std::string name = MappingName(profile_.frames, profile_.frames.at(frame_id));
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
    loc->set_address(frame.address);
    const uint64_t mapping = MappingId(physical);
    loc->set_mapping_id(mapping);
    if (mapping != 0) {
      Range& range = mapping_ranges_[MappingName(profile_.frames, frame)];
      range.low = std::min(range.low, frame.address);
      range.high = std::max(range.high, frame.address);
      range.inlined = range.inlined || frames.size() > 1;
    }
    for (uint32_t f : frames) loc->add_line()->set_function_id(FunctionId(f));
    return id;
  }

  const Profile& profile_;
  pb::Profile& out_;
  StringTable strings_;
  std::vector<uint64_t> function_of_frame_;
  std::vector<uint64_t> mapping_of_frame_;
  std::vector<uint64_t> single_location_;
  std::map<std::vector<uint32_t>, uint64_t> multi_location_;
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
                        const std::string& default_metric, const Metric* cpu_metric) {
  // The cpu values are --metric cpu's, in nanoseconds: PTT's measured CPU
  // time per thread where the capture has it, one period per sample otherwise.
  Metric cpu;
  if (cpu_metric != nullptr) {
    cpu = cpu_metric->InNanoseconds();
  } else if (auto selected = Metric::Select(profile, "cpu")) {
    cpu = selected->InNanoseconds();
  }
  pb::Profile out;
  PprofBuilder builder(profile, out);
  StringTable& strings = builder.strings();

  const uint64_t frequency = profile.meta.frequency_hz;
  const int64_t period = frequency > 0 ? static_cast<int64_t>((1'000'000'000 + frequency / 2) / frequency) : 0;
  pb::ValueType* samples_type = out.add_sample_type();
  samples_type->set_type(strings.Index("samples"));
  samples_type->set_unit(strings.Index("count"));
  pb::ValueType* cpu_type = out.add_sample_type();
  cpu_type->set_type(strings.Index("cpu"));
  cpu_type->set_unit(strings.Index("nanoseconds"));
  // Then every other value type the profile declares and some node has
  // (offcpu ns with record --off-cpu), and with off-CPU time the wall-clock
  // sum of cpu and offcpu.
  std::vector<size_t> declared;
  for (size_t type = 1; type < profile.value_types.size(); ++type) {
    const bool any = std::any_of(profile.threads.begin(), profile.threads.end(),
                                 [&](const ThreadRecord& t) { return t.tree.total(type) > 0; });
    if (!any) continue;
    declared.push_back(type);
    pb::ValueType* t = out.add_sample_type();
    t->set_type(strings.Index(ValidUtf8(profile.value_types[type].name)));
    t->set_unit(strings.Index(ValidUtf8(profile.value_types[type].unit)));
  }
  const std::optional<size_t> offcpu = HasOffCpu(profile) ? profile.ValueIndex("offcpu") : std::nullopt;
  if (offcpu) {
    pb::ValueType* t = out.add_sample_type();
    t->set_type(strings.Index("wall"));
    t->set_unit(strings.Index("nanoseconds"));
  }
  if (default_metric != "samples") out.set_default_sample_type(strings.Index(default_metric));
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
    for (const ThreadRecord& thread : profile.threads) {
      if (!filter.Matches(thread) || thread.tree.total(kSamplesValue) == 0) continue;
      ++sampled;
      if (cpu.CpuMeasured(thread)) ++measured;
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

  const int64_t key_pid = strings.Index("pid");
  const int64_t key_tid = strings.Index("tid");
  const int64_t key_comm = strings.Index("comm");
  const int64_t key_thread_name = strings.Index("thread_name");
  const int64_t key_host = profile.multi_host() ? strings.Index("host") : 0;

  {
    // The main binary: the user-space module with the most samples at the leaf.
    std::map<std::string, std::pair<uint64_t, uint32_t>> leaf_samples;  // module -> (samples, a frame)
    const size_t count = profile.threads.size();
    for (size_t t = 0; t < count; ++t) {
      if (!filter.Matches(profile.threads[t])) continue;
      const CallTree& tree = profile.threads[t].tree;
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

  std::vector<uint64_t> group_location;  // per node: location of the group whose leaf-most node it is
  std::vector<uint32_t> group_next;      // per node: where the next group (toward the root) starts
  std::vector<uint32_t> frames;
  const size_t threads = profile.threads.size();
  for (size_t t = 0; t < threads; ++t) {
    const ThreadRecord& thread = profile.threads[t];
    if (!filter.Matches(thread)) continue;
    const CallTree& tree = profile.threads[t].tree;
    const auto& nodes = tree.nodes();
    group_location.assign(nodes.size(), 0);
    group_next.assign(nodes.size(), 0);
    const int64_t comm = strings.Index(ValidUtf8(ProcessName(thread)));
    const int64_t thread_name = thread.comm.empty() ? 0 : strings.Index(ValidUtf8(thread.comm));
    // Threads PTT did not measure: exactly samples x period, the period the
    // profile declares (--metric cpu's 1e6 / frequency us, without rounding).
    const bool measured = cpu.CpuMeasured(thread);
    const std::vector<uint64_t> cpu_ns = measured ? cpu.Values(thread) : std::vector<uint64_t>();
    for (size_t leaf = 0; leaf < nodes.size(); ++leaf) {
      const auto value = [&](size_t type) {
        return static_cast<int64_t>(tree.value(static_cast<uint32_t>(leaf), type));
      };
      bool any = value(kSamplesValue) != 0;
      for (size_t type : declared) any = any || value(type) != 0;
      if (!any) continue;
      pb::Sample* sample = out.add_sample();
      size_t n = leaf;
      bool valid = true;
      while (n != 0 && valid) {
        if (group_location[n] == 0) {
          frames.clear();
          size_t m = n;
          while (true) {
            if (nodes[m].parent >= m || nodes[m].frame >= profile.frames.size()) {
              valid = false;  // not a capture tree; ReadCapture never returns one
              break;
            }
            frames.push_back(nodes[m].frame);
            if (!profile.frames.at(nodes[m].frame).inlined || nodes[m].parent == 0) break;
            m = nodes[m].parent;
          }
          if (!valid) break;
          group_location[n] = builder.Location(frames);
          group_next[n] = nodes[m].parent;
        }
        sample->add_location_id(group_location[n]);
        n = group_next[n];
      }
      const int64_t count = value(kSamplesValue);
      const int64_t on_cpu = measured ? static_cast<int64_t>(cpu_ns[leaf]) : count * period;
      sample->add_value(count);
      sample->add_value(on_cpu);
      for (size_t type : declared) sample->add_value(value(type));
      if (offcpu) sample->add_value(on_cpu + value(*offcpu));
      pb::Label* pid = sample->add_label();
      pid->set_key(key_pid);
      pid->set_num(thread.pid);
      pb::Label* tid = sample->add_label();
      tid->set_key(key_tid);
      tid->set_num(thread.tid);
      AddLabel(sample, key_comm, comm);
      if (thread_name != 0) AddLabel(sample, key_thread_name, thread_name);
      if (key_host != 0 && !thread.host.empty()) AddLabel(sample, key_host, strings.Index(ValidUtf8(thread.host)));
    }
  }
  builder.FinishMappings();
  std::string bytes;
  out.SerializeToString(&bytes);
  return bytes;
}

Result<std::string> Gzip(std::string_view bytes) {
  if (bytes.size() > 0xffffffffu) return MakeError("gzip: profile larger than 4 GiB; narrow it with --pid, --root or --min");
  z_stream stream{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
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
