#include "reports/profile_samples.h"

#include <algorithm>

#include "model/frame_name.h"
#include "model/value_types.h"
#include "reports/export_text.h"

namespace arcprof::reports {
using namespace arcprof::model;

SampleSchema DescribeSamples(const Profile& profile, const Metric* cpu_metric) {
  SampleSchema schema;
  if (cpu_metric != nullptr) {
    schema.cpu = cpu_metric->InNanoseconds();
  } else if (auto selected = Metric::Select(profile, "cpu")) {
    schema.cpu = selected->InNanoseconds();
  }
  schema.frequency_hz = profile.meta.frequency_hz;
  const uint64_t frequency = schema.frequency_hz;
  schema.period_ns = frequency > 0 ? static_cast<int64_t>((1'000'000'000 + frequency / 2) / frequency) : 0;
  schema.types = {{"samples", "count"}, {"cpu", "nanoseconds"}};
  for (size_t type = 1; type < profile.value_types.size(); ++type) {
    const bool any = std::any_of(profile.threads.begin(), profile.threads.end(),
                                 [&](const ThreadRecord& t) { return t.tree.total(type) > 0; });
    if (!any) continue;
    schema.declared.push_back(type);
    // Types with a pprof name of their own (the Go heap profile's) keep it in every export.
    schema.types.push_back({ValidUtf8(std::string(PprofTypeName(profile.value_types[type].name))),
                            ValidUtf8(profile.value_types[type].unit)});
  }
  schema.offcpu = HasOffCpu(profile) ? profile.ValueIndex(kOffCpuNs.name) : std::nullopt;
  if (schema.offcpu) schema.types.push_back({"wall", "nanoseconds"});
  return schema;
}

std::vector<const ThreadRecord*> SelectThreads(const Profile& profile, const ThreadFilter& filter) {
  std::vector<const ThreadRecord*> out;
  for (const ThreadRecord& thread : profile.threads) {
    if (filter.Matches(thread)) out.push_back(&thread);
  }
  return out;
}

void ForEachSample(const Profile& profile, const ThreadFilter& filter, const SampleSchema& schema,
                   const LocationOf& location, const SampleSink& sample) {
  ForEachSample(profile, SelectThreads(profile, filter), schema, location, sample);
}

void ForEachSample(const Profile& profile, std::span<const ThreadRecord* const> threads, const SampleSchema& schema,
                   const LocationOf& location, const SampleSink& sample) {
  std::vector<uint64_t> group_location;  // per node: location of the group whose leaf-most node it is
  std::vector<uint32_t> group_next;      // per node: where the next group (toward the root) starts
  std::vector<uint32_t> frames;
  std::vector<uint64_t> locations;
  std::vector<int64_t> values;
  for (const ThreadRecord* selected : threads) {
    const ThreadRecord& thread = *selected;
    const CallTree& tree = thread.tree;
    const auto& nodes = tree.nodes();
    group_location.assign(nodes.size(), 0);
    group_next.assign(nodes.size(), 0);
    // Threads PTT did not measure: exactly samples x period, the period the
    // profile declares (--metric cpu's 1e6 / frequency us, without rounding).
    const bool measured = schema.cpu.CpuMeasured(thread);
    const std::vector<uint64_t> cpu_ns = measured ? schema.cpu.Values(thread) : std::vector<uint64_t>();
    // Nodes in depth-first preorder, children in creation order: the order a
    // capture stores a tree in (store/capture_blocks.cpp), so a window encodes
    // to the same bytes in memory as read back from its capture, and
    // `continuous --push` sends the window it has just written without
    // reading it back (push/store_windows.h, Keep).
    // A tree whose parents do not come before their children (never a
    // capture's) keeps index order; the walk below rejects its bad stacks.
    std::vector<uint32_t> order;
    order.reserve(nodes.size());
    bool tree_order = true;
    for (size_t v = 1; v < nodes.size() && tree_order; ++v) tree_order = nodes[v].parent < v;
    if (!tree_order) {
      for (size_t v = 0; v < nodes.size(); ++v) order.push_back(static_cast<uint32_t>(v));
    } else {
      const ChildLists children(tree);
      std::vector<uint32_t> todo;
      if (!nodes.empty()) todo.push_back(0);
      while (!todo.empty()) {
        const uint32_t v = todo.back();
        todo.pop_back();
        order.push_back(v);
        const auto c = children.of(v);
        for (size_t i = c.size(); i-- > 0;) todo.push_back(c[i]);
      }
    }
    for (const uint32_t leaf : order) {
      const auto value = [&](size_t type) {
        return static_cast<int64_t>(tree.value(static_cast<uint32_t>(leaf), type));
      };
      bool any = value(kSamplesValue) != 0;
      for (size_t type : schema.declared) any = any || value(type) != 0;
      if (!any) continue;
      locations.clear();
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
          group_location[n] = location(frames);
          group_next[n] = nodes[m].parent;
        }
        locations.push_back(group_location[n]);
        n = group_next[n];
      }
      const int64_t count = value(kSamplesValue);
      const int64_t on_cpu = measured ? static_cast<int64_t>(cpu_ns[leaf]) : count * schema.period_ns;
      values.clear();
      values.push_back(count);
      values.push_back(on_cpu);
      for (size_t type : schema.declared) values.push_back(value(type));
      if (schema.offcpu) values.push_back(on_cpu + value(*schema.offcpu));
      sample(thread, locations, values);
    }
  }
}

uint64_t LocationIds::Get(const std::vector<uint32_t>& frames, const LocationOf& make) {
  if (frames.size() == 1) {
    uint64_t& id = single_[frames[0]];
    if (id == 0) id = make(frames);
    return id;
  }
  auto [it, inserted] = multi_.try_emplace(frames, 0);
  if (inserted) it->second = make(frames);
  return it->second;
}

std::string ExportFunctionName(const FrameTable& frames, uint32_t id) {
  return ValidUtf8(FrameDisplayName(frames, id));
}

std::string ExportMappingName(const FrameTable& frames, const FrameRecord& frame) {
  if (frame.kind == FrameKind::kJit || frame.kind == FrameKind::kInterpreted || IsRuntimeKind(frame.kind)) {
    return "";
  }
  const std::string& module = frames.module_of(frame);
  if (frame.kind == FrameKind::kKernel) {
    return module == "vmlinux" || module.empty() ? "[kernel.kallsyms]" : "[" + module + "]";
  }
  return module;
}

std::string ExportSourceFile(const FrameTable& frames, const FrameRecord& frame) {
  return IsRuntimeKind(frame.kind) ? ValidUtf8(frames.module_of(frame)) : std::string();
}

int64_t ExportSourceLine(const FrameRecord& frame) {
  return IsRuntimeKind(frame.kind) ? SourceLine(frame.address) : 0;
}

uint64_t ExportAddress(const FrameRecord& frame) { return IsRuntimeKind(frame.kind) ? 0 : frame.address; }

}  // namespace arcprof::reports
