#include "reports/speedscope.h"

#include "model/frame_name.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <vector>

#include "reports/export_text.h"

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

// Frames are keyed by index in speedscope, so equal (name, file) pairs share one.
std::string FrameName(const FrameRecord& frame) { return FrameDisplayName(frame); }

}  // namespace

void WriteSpeedscope(const Profile& profile, const ThreadFilter& filter, std::ostream& out) {
  std::vector<int64_t> frame_index(profile.frames.size(), -1);
  std::map<std::pair<std::string, std::string>, int64_t> shared;
  std::string frames_json;
  auto index_of = [&](uint32_t frame_id) {
    int64_t& index = frame_index[frame_id];
    if (index >= 0) return index;
    const FrameRecord& frame = profile.frames.at(frame_id);
    std::pair<std::string, std::string> key{FrameName(frame), frame.module};
    auto [it, inserted] = shared.try_emplace(key, static_cast<int64_t>(shared.size()));
    if (inserted) {
      if (it->second != 0) frames_json += ',';
      frames_json += "{\"name\":" + JsonString(key.first);
      if (!key.second.empty()) frames_json += ",\"file\":" + JsonString(key.second);
      frames_json += '}';
    }
    index = it->second;
    return index;
  };

  std::string profiles_json;
  size_t profile_count = 0;
  size_t hottest = 0;
  uint64_t hottest_total = 0;
  std::vector<uint32_t> stack;
  const size_t threads = profile.threads.size();
  for (size_t t = 0; t < threads; ++t) {
    const ThreadRecord& thread = profile.threads[t];
    if (!filter.Matches(thread)) continue;
    const auto& nodes = profile.threads[t].tree.nodes();
    std::string samples, weights;
    uint64_t total = 0;
    for (size_t leaf = 0; leaf < nodes.size(); ++leaf) {
      if (nodes[leaf].base == 0) continue;
      stack.clear();
      bool valid = true;
      for (size_t n = leaf; n != 0; n = nodes[n].parent) {
        if (nodes[n].parent >= n || nodes[n].frame >= profile.frames.size()) {
          valid = false;
          break;
        }
        stack.push_back(nodes[n].frame);
      }
      if (!valid) continue;
      if (!samples.empty()) {
        samples += ',';
        weights += ',';
      }
      samples += '[';
      for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
        if (it != stack.rbegin()) samples += ',';
        samples += std::to_string(index_of(*it));
      }
      samples += ']';
      weights += std::to_string(nodes[leaf].base);
      total += nodes[leaf].base;
    }
    if (total == 0) continue;
    if (total > hottest_total) {
      hottest_total = total;
      hottest = profile_count;
    }
    const std::string name = (thread.host.empty() ? "" : thread.host + ": ") + ProcessName(thread) + " pid " + std::to_string(thread.pid) + " tid " +
                             std::to_string(thread.tid) + (thread.comm.empty() ? "" : " " + thread.comm);
    if (profile_count++ != 0) profiles_json += ",\n";
    profiles_json += "{\"type\":\"sampled\",\"name\":" + JsonString(name) +
                     ",\"unit\":\"none\",\"startValue\":0,\"endValue\":" + std::to_string(total) +
                     ",\"samples\":[" + samples + "],\"weights\":[" + weights + "]}";
  }

  std::string title = "arcprof";
  if (!profile.meta.target.empty()) title += " " + profile.meta.target;
  out << "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
      << "\"name\":" << JsonString(title) << ",\n"
      << "\"exporter\":" << JsonString("arcprof@" + profile.meta.arcprof_version) << ",\n"
      << "\"activeProfileIndex\":" << hottest << ",\n"
      << "\"shared\":{\"frames\":[" << frames_json << "]},\n"
      << "\"profiles\":[\n" << profiles_json << "\n]}\n";
}

}  // namespace arcprof::reports
