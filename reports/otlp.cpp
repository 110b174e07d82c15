#include "reports/otlp.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"
#include "reports/export_text.h"
#include "reports/profile_samples.h"

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

namespace pb = opentelemetry::proto::profiles::v1development;
namespace common = opentelemetry::proto::common::v1;

// FNV-1a, 64 bits, from a chosen offset.
uint64_t Fnv1a(std::string_view text, uint64_t hash) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// The dictionary of one request: every table starts with its zero value, and
// every entry is held once.
class Dictionary {
 public:
  Dictionary(const Profile& profile, pb::ProfilesDictionary& out)
      : profile_(profile), out_(out), function_of_frame_(profile.frames.size(), 0),
        mapping_of_frame_(profile.frames.size(), kUnset), locations_(profile.frames.size()) {
    out_.add_string_table("");
    out_.add_mapping_table();
    out_.add_location_table();
    out_.add_function_table();
    pb::Link* link = out_.add_link_table();  // the recommended zero link: 16 and 8 zero bytes
    link->set_trace_id(std::string(16, '\0'));
    link->set_span_id(std::string(8, '\0'));
    out_.add_attribute_table();
    out_.add_stack_table();
    strings_.emplace("", 0);
  }

  int32_t String(const std::string& s) {
    auto [it, inserted] = strings_.try_emplace(s, out_.string_table_size());
    if (inserted) out_.add_string_table(s);
    return it->second;
  }

  // The attribute key = value (a string or an integer), held once.
  template <typename Value>
  int32_t Attribute(const std::string& key, const Value& value) {
    auto& index = std::get<std::map<std::pair<std::string, Value>, int32_t>>(attributes_);
    auto [it, inserted] = index.try_emplace({key, value}, 0);
    if (inserted) {
      it->second = out_.attribute_table_size();
      pb::KeyValueAndUnit* a = out_.add_attribute_table();
      a->set_key_strindex(String(key));
      if constexpr (std::is_same_v<Value, std::string>) {
        a->mutable_value()->set_string_value(value);
      } else {
        a->mutable_value()->set_int_value(value);
      }
    }
    return it->second;
  }

  // The location of a group of frames (leaf first, the physical frame last).
  uint64_t Location(const std::vector<uint32_t>& frames) {
    return locations_.Get(frames, [this](const std::vector<uint32_t>& f) { return NewLocation(f); });
  }

  int32_t Stack(std::span<const uint64_t> locations) {
    key_.assign(locations.begin(), locations.end());
    auto [it, inserted] = stacks_.try_emplace(key_, 0);
    if (inserted) {
      it->second = out_.stack_table_size();
      pb::Stack* stack = out_.add_stack_table();
      for (uint64_t l : locations) stack->add_location_indices(static_cast<int32_t>(l));
    }
    return it->second;
  }

  void FinishMappings() {
    for (auto& [name, range] : ranges_) {
      pb::Mapping* m = out_.mutable_mapping_table(range.index);
      m->set_memory_start(range.low);
      m->set_memory_limit(range.high + 1);
    }
  }

 private:
  static constexpr int32_t kUnset = -1;
  struct Range {
    int32_t index = 0;
    uint64_t low = ~0ull;
    uint64_t high = 0;
  };

  int32_t Function(uint32_t frame_id) {
    int32_t& id = function_of_frame_[frame_id];
    if (id != 0) return id;
    const std::string name = ExportFunctionName(profile_.frames, frame_id);
    const std::string file = ExportSourceFile(profile_.frames, profile_.frames.at(frame_id));
    auto [it, inserted] = function_by_name_.try_emplace(file.empty() ? name : name + '\0' + file, 0);
    if (inserted) {
      it->second = out_.function_table_size();
      pb::Function* f = out_.add_function_table();
      f->set_name_strindex(String(name));
      f->set_system_name_strindex(f->name_strindex());
      if (!file.empty()) f->set_filename_strindex(String(file));
    }
    return id = it->second;
  }

  int32_t Mapping(uint32_t frame_id) {
    int32_t& id = mapping_of_frame_[frame_id];
    if (id != kUnset) return id;
    const std::string name = ExportMappingName(profile_.frames, profile_.frames.at(frame_id));
    if (name.empty()) return id = 0;
    auto [it, inserted] = ranges_.try_emplace(name);
    if (inserted) {
      it->second.index = out_.mapping_table_size();
      pb::Mapping* m = out_.add_mapping_table();
      m->set_filename_strindex(String(ValidUtf8(name)));
      auto build_id = profile_.build_ids.find(name);
      if (build_id != profile_.build_ids.end() && !build_id->second.empty()) {
        m->add_attribute_indices(Attribute("process.executable.build_id.gnu", ValidUtf8(build_id->second)));
      }
    }
    return id = it->second.index;
  }

  int32_t NewLocation(const std::vector<uint32_t>& frames) {
    const int32_t id = out_.location_table_size();
    pb::Location* loc = out_.add_location_table();
    const uint32_t physical = frames.back();
    const FrameRecord& frame = profile_.frames.at(physical);
    loc->set_address(ExportAddress(frame));
    const int32_t mapping = Mapping(physical);
    loc->set_mapping_index(mapping);
    if (mapping != 0) {
      Range& range = ranges_[ExportMappingName(profile_.frames, frame)];
      range.low = std::min(range.low, frame.address);
      range.high = std::max(range.high, frame.address);
    }
    for (uint32_t f : frames) {
      pb::Line* line = loc->add_lines();
      line->set_function_index(Function(f));
      line->set_line(ExportSourceLine(profile_.frames.at(f)));
    }
    return id;
  }

  const Profile& profile_;
  pb::ProfilesDictionary& out_;
  std::unordered_map<std::string, int32_t> strings_;
  std::tuple<std::map<std::pair<std::string, std::string>, int32_t>, std::map<std::pair<std::string, int64_t>, int32_t>>
      attributes_;
  std::vector<int32_t> function_of_frame_;
  std::vector<int32_t> mapping_of_frame_;
  LocationIds locations_;
  std::unordered_map<std::string, int32_t> function_by_name_;
  std::map<std::string, Range> ranges_;
  std::map<std::vector<uint64_t>, int32_t> stacks_;
  std::vector<uint64_t> key_;
};

}  // namespace

std::string StableId16(const std::string& text) {
  const uint64_t high = Fnv1a(text, 0xcbf29ce484222325ull);
  const uint64_t low = Fnv1a(text, 0x84222325cbf29ce4ull ^ high);
  std::string id(16, '\0');
  for (int i = 0; i < 8; ++i) {
    id[i] = static_cast<char>(high >> (56 - 8 * i));
    id[8 + i] = static_cast<char>(low >> (56 - 8 * i));
  }
  return id;
}

std::string EncodeOtlp(const Profile& profile, const ThreadFilter& filter, const OtlpOptions& options,
                       const Metric* cpu) {
  const SampleSchema schema = DescribeSamples(profile, cpu);
  opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest request;
  Dictionary dict(profile, *request.mutable_dictionary());

  // One resource per distinct set of resource attributes (the machine and the
  // process's identity), in the order of the threads; the given attributes
  // replace a thread's of the same key.
  using Attributes = std::vector<std::pair<std::string, std::string>>;
  const auto resource_of = [&](const std::string& host_name, const model::ProcessIdentity& identity) {
    Attributes a;
    const auto set = [&](const std::string& key, const std::string& value) {
      if (value.empty()) return;
      auto it = std::find_if(a.begin(), a.end(), [&](const auto& kv) { return kv.first == key; });
      if (it != a.end()) {
        it->second = value;
      } else {
        a.emplace_back(key, value);
      }
    };
    set("host.name", ValidUtf8(host_name));
    set("container.id", ValidUtf8(identity.container_id));
    set("k8s.pod.uid", ValidUtf8(identity.pod_uid));
    set("service.name", ValidUtf8(identity.service_name));
    for (const auto& [key, value] : options.resource_attributes) set(ValidUtf8(key), ValidUtf8(value));
    return a;
  };
  const auto thread_resource = [&](const ThreadRecord& t) {
    return resource_of(t.host.empty() ? profile.meta.host : t.host, t.identity);
  };
  std::map<Attributes, size_t> resource_index;
  std::vector<pb::ScopeProfiles*> scopes;
  const auto add_resource = [&](const Attributes& attributes) {
    if (!resource_index.emplace(attributes, scopes.size()).second) return;
    pb::ResourceProfiles* rp = request.add_resource_profiles();
    for (const auto& [key, value] : attributes) {
      common::KeyValue* kv = rp->mutable_resource()->add_attributes();
      kv->set_key(key);
      kv->mutable_value()->set_string_value(value);
    }
    pb::ScopeProfiles* scope = rp->add_scope_profiles();
    scope->mutable_scope()->set_name("arcprof");
    scope->mutable_scope()->set_version(ValidUtf8(profile.meta.arcprof_version));
    const size_t r = scopes.size();
    for (size_t type = 0; type < schema.types.size(); ++type) {
      pb::Profile* p = scope->add_profiles();
      p->mutable_sample_type()->set_type_strindex(dict.String(schema.types[type].name));
      p->mutable_sample_type()->set_unit_strindex(dict.String(schema.types[type].unit));
      p->mutable_period_type()->set_type_strindex(dict.String("cpu"));
      p->mutable_period_type()->set_unit_strindex(dict.String("nanoseconds"));
      p->set_period(schema.period_ns);
      p->set_time_unix_nano(profile.meta.start_unix_ns);
      if (profile.meta.end_monotonic_ns > profile.meta.start_monotonic_ns) {
        p->set_duration_nano(profile.meta.end_monotonic_ns - profile.meta.start_monotonic_ns);
      }
      if (!options.profile_id_seed.empty()) {
        p->set_profile_id(StableId16(options.profile_id_seed + "/" + std::to_string(r) + "/" +
                                     std::to_string(type)));
      }
    }
    scopes.push_back(scope);
  };
  for (const ThreadRecord& thread : profile.threads) {
    if (filter.Matches(thread)) add_resource(thread_resource(thread));
  }
  // A window without samples is still one (empty) profile of the machine.
  if (scopes.empty()) add_resource(resource_of(profile.meta.host, {}));

  std::vector<int32_t> attributes;
  const ThreadRecord* last_thread = nullptr;
  pb::ScopeProfiles* scope = nullptr;
  ForEachSample(
      profile, filter, schema, [&](const std::vector<uint32_t>& frames) { return dict.Location(frames); },
      [&](const ThreadRecord& thread, std::span<const uint64_t> locations, std::span<const int64_t> values) {
        if (&thread != last_thread) {
          last_thread = &thread;
          attributes = {dict.Attribute("process.pid", static_cast<int64_t>(thread.pid)),
                        dict.Attribute("process.executable.name", ValidUtf8(ProcessName(thread))),
                        dict.Attribute("thread.id", static_cast<int64_t>(thread.tid))};
          if (!thread.comm.empty()) attributes.push_back(dict.Attribute("thread.name", ValidUtf8(thread.comm)));
          scope = scopes[resource_index.at(thread_resource(thread))];
        }
        const int32_t stack = dict.Stack(locations);
        for (size_t type = 0; type < values.size(); ++type) {
          if (values[type] == 0) continue;
          pb::Sample* sample = scope->mutable_profiles(static_cast<int>(type))->add_samples();
          sample->set_stack_index(stack);
          for (int32_t a : attributes) sample->add_attribute_indices(a);
          sample->add_values(values[type]);
        }
      });
  dict.FinishMappings();
  std::string bytes;
  request.SerializeToString(&bytes);
  return bytes;
}

}  // namespace arcprof::reports
