#include "reports/speedscope.h"

#include "model/frame_name.h"

#include <map>
#include <tuple>
#include <ostream>
#include <vector>

#include "reports/json_writer.h"
#include "reports/profile_samples.h"

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

// The frames of the sampled stack ending at `leaf`, leaf first; false when
// the tree is inconsistent (a parent after its child, a frame id out of range).
bool StackOf(const std::vector<CallTree::Node>& nodes, size_t leaf, size_t frame_count,
             std::vector<uint32_t>& stack) {
  stack.clear();
  for (size_t n = leaf; n != 0; n = nodes[n].parent) {
    if (nodes[n].parent >= n || nodes[n].frame >= frame_count) return false;
    stack.push_back(nodes[n].frame);
  }
  return true;
}

}  // namespace

// Two passes over the threads: the first numbers the shared frames (in order
// of first use) and finds the hottest profile, the second streams the
// profiles. Nothing but the frame table is held, whatever the capture's size.
void WriteSpeedscope(const Profile& profile, const ThreadFilter& filter, std::ostream& out,
                     const Metric& metric) {
  std::vector<int64_t> frame_index(profile.frames.size(), -1);
  // Frames are keyed by index in speedscope, so equal (name, file, line)
  // share one; the file is keyed by its module id (the line: a runtime's
  // frames, python and js; 0 for others).
  std::map<std::tuple<std::string, uint32_t, int64_t>, int64_t> shared;
  Json frames = Json::array();
  auto index_of = [&](uint32_t frame_id) {
    int64_t& index = frame_index[frame_id];
    if (index >= 0) return index;
    const FrameRecord& frame = profile.frames.at(frame_id);
    std::tuple<std::string, uint32_t, int64_t> key{FrameDisplayName(profile.frames, frame_id), frame.module,
                                                   ExportSourceLine(frame)};
    auto [it, inserted] = shared.try_emplace(key, static_cast<int64_t>(shared.size()));
    if (inserted) {
      Json item = {{"name", std::get<0>(key)}};
      if (frame.module != 0) item["file"] = profile.frames.module(frame.module);
      if (std::get<2>(key) > 0) item["line"] = std::get<2>(key);
      if (SourceColumn(frame.address) > 0 && IsRuntimeKind(frame.kind)) item["col"] = SourceColumn(frame.address);
      frames.push_back(std::move(item));
    }
    index = it->second;
    return index;
  };

  std::vector<uint64_t> totals(profile.threads.size(), 0);
  size_t profile_count = 0;
  size_t hottest = 0;
  uint64_t hottest_total = 0;
  std::vector<uint32_t> stack;
  for (size_t t = 0; t < profile.threads.size(); ++t) {
    const ThreadRecord& thread = profile.threads[t];
    if (!filter.Matches(thread)) continue;
    const auto& nodes = thread.tree.nodes();
    const std::vector<uint64_t> weights = metric.Values(thread);
    uint64_t total = 0;
    for (size_t leaf = 0; leaf < nodes.size(); ++leaf) {
      const uint64_t weight = weights[leaf];
      if (weight == 0 || !StackOf(nodes, leaf, profile.frames.size(), stack)) continue;
      for (auto it = stack.rbegin(); it != stack.rend(); ++it) index_of(*it);
      total += weight;
    }
    totals[t] = total;
    if (total == 0) continue;
    if (total > hottest_total) {
      hottest_total = total;
      hottest = profile_count;
    }
    ++profile_count;
  }

  // cpu, offcpu and wall are microseconds (model/metric.h: unit "<name>-us").
  const std::string& unit = metric.unit();
  const bool time_metric = unit.size() > 3 && unit.compare(unit.size() - 3, 3, "-us") == 0;
  std::string title = "arcprof";
  if (!profile.meta.target.empty()) title += " " + profile.meta.target;
  JsonStream json(out);
  json.BeginObject().Members({{"$schema", "https://www.speedscope.app/file-format-schema.json"},
                              {"name", title},
                              {"exporter", "arcprof@" + profile.meta.arcprof_version},
                              {"activeProfileIndex", hottest},
                              {"shared", {{"frames", std::move(frames)}}}});
  json.Key("profiles").BeginArray(/*one_per_line=*/true);
  for (size_t t = 0; t < profile.threads.size(); ++t) {
    if (totals[t] == 0) continue;
    const ThreadRecord& thread = profile.threads[t];
    const auto& nodes = thread.tree.nodes();
    const std::vector<uint64_t> weights = metric.Values(thread);
    const auto weight = [&](size_t leaf) { return weights[leaf]; };
    const std::string name = (thread.host.empty() ? "" : thread.host + ": ") + ProcessName(thread) + " pid " +
                             std::to_string(thread.pid) + " tid " + std::to_string(thread.tid) +
                             (thread.comm.empty() ? "" : " " + thread.comm);
    json.BeginObject().Members({{"type", "sampled"},
                                {"name", name},
                                {"unit", time_metric ? "microseconds" : "none"},
                                {"startValue", 0},
                                {"endValue", totals[t]}});
    Json indices = Json::array();
    json.Key("samples").BeginArray();
    for (size_t leaf = 0; leaf < nodes.size(); ++leaf) {
      if (weight(leaf) == 0 || !StackOf(nodes, leaf, profile.frames.size(), stack)) continue;
      indices.clear();
      for (auto it = stack.rbegin(); it != stack.rend(); ++it) indices.push_back(frame_index[*it]);
      json.Value(indices);
    }
    json.End().Key("weights").BeginArray();
    for (size_t leaf = 0; leaf < nodes.size(); ++leaf) {
      if (weight(leaf) == 0 || !StackOf(nodes, leaf, profile.frames.size(), stack)) continue;
      json.Value(weight(leaf));
    }
    json.End().End();
  }
  json.End().End();
  out << '\n';
}

}  // namespace arcprof::reports
