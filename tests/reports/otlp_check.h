// Reading an OTLP profiles request back with the generated classes of the
// vendored protos, and what a capture should give, computed from its call
// trees directly (not through the encoder's walk): the tests of the otlp
// export (tests/reports) and of the OTLP push (tests/push) compare the two.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/frame_name.h"
#include "model/metric.h"
#include "model/profile.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"
#include "reports/export_text.h"

namespace arcprof::testing {

// Per sample type ("samples", "cpu", "offcpu", "wall"): the total, and the
// value of every stack keyed "pid/tid;root frame;...;leaf frame".
struct OtlpContent {
  std::map<std::string, int64_t> totals;
  std::map<std::string, std::map<std::string, int64_t>> stacks;
  // Resource attributes, one map per ResourceProfiles.
  std::vector<std::map<std::string, std::string>> resources;
  std::vector<std::string> profile_ids;  // every profile's, in order
  std::string error;                     // a broken reference, "" when none
};

inline OtlpContent DecodeOtlp(const std::string& bytes) {
  namespace pb = opentelemetry::proto::profiles::v1development;
  OtlpContent c;
  opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest request;
  if (!request.ParseFromString(bytes)) {
    c.error = "not an ExportProfilesServiceRequest";
    return c;
  }
  const pb::ProfilesDictionary& d = request.dictionary();
  const auto str = [&](int32_t i) -> std::string {
    if (i < 0 || i >= d.string_table_size()) {
      c.error = "string index " + std::to_string(i);
      return "";
    }
    return d.string_table(i);
  };
  if (d.string_table_size() == 0 || d.string_table(0) != "" || d.mapping_table_size() == 0 ||
      d.location_table_size() == 0 || d.function_table_size() == 0 || d.stack_table_size() == 0 ||
      d.attribute_table_size() == 0 || d.link_table_size() == 0) {
    c.error = "a dictionary table lacks its zero entry";
  }
  for (const pb::ResourceProfiles& rp : request.resource_profiles()) {
    std::map<std::string, std::string> attributes;
    for (const auto& kv : rp.resource().attributes()) attributes[kv.key()] = kv.value().string_value();
    c.resources.push_back(attributes);
    for (const pb::ScopeProfiles& sp : rp.scope_profiles()) {
      for (const pb::Profile& p : sp.profiles()) {
        c.profile_ids.push_back(p.profile_id());
        const std::string type = str(p.sample_type().type_strindex());
        int64_t& total = c.totals[type];
        auto& stacks = c.stacks[type];
        for (const pb::Sample& s : p.samples()) {
          if (s.stack_index() <= 0 || s.stack_index() >= d.stack_table_size() || s.values_size() != 1) {
            c.error = "sample with stack " + std::to_string(s.stack_index());
            continue;
          }
          int64_t pid = -1, tid = -1;
          for (int32_t a : s.attribute_indices()) {
            if (a <= 0 || a >= d.attribute_table_size()) {
              c.error = "attribute index " + std::to_string(a);
              continue;
            }
            const std::string key = str(d.attribute_table(a).key_strindex());
            if (key == "process.pid") pid = d.attribute_table(a).value().int_value();
            if (key == "thread.id") tid = d.attribute_table(a).value().int_value();
          }
          std::vector<std::string> names;  // leaf first
          for (int32_t l : d.stack_table(s.stack_index()).location_indices()) {
            if (l <= 0 || l >= d.location_table_size()) {
              c.error = "location index " + std::to_string(l);
              continue;
            }
            for (const pb::Line& line : d.location_table(l).lines()) {
              const int32_t f = line.function_index();
              if (f <= 0 || f >= d.function_table_size()) {
                c.error = "function index " + std::to_string(f);
                continue;
              }
              names.push_back(str(d.function_table(f).name_strindex()));
            }
          }
          std::string key = std::to_string(pid) + "/" + std::to_string(tid);
          for (auto it = names.rbegin(); it != names.rend(); ++it) key += ";" + *it;
          stacks[key] += s.values(0);
          total += s.values(0);
        }
      }
    }
  }
  return c;
}

// The same from the capture's trees: samples and every declared value type
// per node; the totals of cpu (--metric cpu in nanoseconds) and wall.
inline OtlpContent CaptureContent(const model::Profile& profile) {
  OtlpContent c;
  for (const model::ThreadRecord& thread : profile.threads) {
    const auto& nodes = thread.tree.nodes();
    for (uint32_t n = 1; n < nodes.size(); ++n) {
      std::vector<std::string> names;
      for (uint32_t m = n; m != 0; m = nodes[m].parent) {
        names.push_back(reports::ValidUtf8(model::FrameDisplayName(profile.frames, nodes[m].frame)));
      }
      std::string key = std::to_string(thread.pid) + "/" + std::to_string(thread.tid);
      for (auto it = names.rbegin(); it != names.rend(); ++it) key += ";" + *it;
      for (size_t type = 0; type < profile.value_types.size(); ++type) {
        const int64_t v = static_cast<int64_t>(thread.tree.value(n, type));
        if (v == 0) continue;
        c.stacks[profile.value_types[type].name][key] += v;
        c.totals[profile.value_types[type].name] += v;
      }
    }
  }
  // cpu: PTT's time where measured, else samples x the declared period.
  const uint64_t f = profile.meta.frequency_hz;
  const int64_t period = f > 0 ? static_cast<int64_t>((1'000'000'000 + f / 2) / f) : 0;
  // A type without any value has no total (the export writes no zero values).
  int64_t cpu_total = 0;
  if (auto cpu = model::Metric::Select(profile, "cpu")) {
    const model::Metric ns = cpu->InNanoseconds();
    for (const model::ThreadRecord& thread : profile.threads) {
      cpu_total += ns.CpuMeasured(thread) ? static_cast<int64_t>(ns.Total(thread))
                                          : static_cast<int64_t>(thread.tree.total()) * period;
    }
  }
  if (cpu_total != 0) c.totals["cpu"] = cpu_total;
  if (c.totals.count("offcpu")) c.totals["wall"] = cpu_total + c.totals["offcpu"];
  return c;
}

}  // namespace arcprof::testing
