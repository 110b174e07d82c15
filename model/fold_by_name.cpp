#include "model/fold_by_name.h"

#include "model/frame_name.h"

namespace arcprof::model {

NameFold FoldByName(const Profile& profile, const ThreadFilter& filter, const Metric& metric,
                    const FoldOptions& options) {
  constexpr uint32_t kUnmapped = NamePool::kNoName;
  NameFold fold;
  CallTree& tree = fold.tree;
  // Room for every node of the profile: exact when each thread keeps a path
  // of its own (arcflow's), and no rehash on the way when threads merge.
  size_t profile_nodes = 1;
  for (const ThreadRecord& thread : profile.threads) profile_nodes += thread.tree.size();
  tree.Reserve(profile_nodes);

  // The name of each frame id, interned when first met.
  std::vector<uint32_t> name_of_frame(profile.frames.size(), kUnmapped);
  auto name_of = [&](uint32_t frame_id) {
    if (frame_id >= name_of_frame.size()) return fold.names.Intern("[bad frame id]", NameKind::kUnknown);
    uint32_t& name = name_of_frame[frame_id];
    if (name == kUnmapped) {
      const FrameRecord& frame = profile.frames.at(frame_id);
      const std::string_view module = profile.frames.module_of(frame);
      name = fold.names.Intern(options.lines ? FrameDisplayNameWithLine(frame, module) : FrameDisplayName(frame, module),
                               options.kinds ? NameKindOf(frame) : NameKind::kFunction);
    }
    return name;
  };

  std::vector<std::string> levels;
  std::vector<uint32_t> mapped;
  for (const ThreadRecord& thread : profile.threads) {
    if (!filter.Matches(thread)) continue;
    const auto& nodes = thread.tree.nodes();
    const std::vector<uint64_t> values = metric.Values(thread);
    if (!options.empty_threads) {
      uint64_t sum = 0;
      for (uint64_t v : values) sum += v;
      if (sum == 0) continue;
    }
    uint32_t top = 0;
    levels.clear();
    if (options.levels) options.levels(thread, levels);
    for (const std::string& level : levels) top = tree.Child(top, fold.names.Intern(level, NameKind::kGroup));
    mapped.assign(nodes.size(), top);
    tree.Add(top, nodes[0].n, kSamplesValue, values[0]);
    // Parents precede their children (model/profile.h, CallTree).
    for (uint32_t i = 1; i < nodes.size(); ++i) {
      const CallTree::Node& node = nodes[i];
      mapped[i] = tree.Child(mapped[node.parent], name_of(node.frame));
      tree.Add(mapped[i], node.n, kSamplesValue, values[i]);
    }
  }
  return fold;
}

}  // namespace arcprof::model
