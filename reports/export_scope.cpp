#include "reports/export_scope.h"

#include "model/frame_name.h"
#include "model/name_regex.h"

#include <vector>

namespace arcprof::reports {
using namespace arcprof::model;
namespace {

constexpr uint32_t kDropped = 0xffffffffu;

}  // namespace

Result<Profile> ScopeProfile(const Profile& profile, const ExportOptions& options) {
  if (!(options.min_percent >= 0 && options.min_percent <= 100)) {
    return MakeError("--min must be a percentage between 0 and 100");
  }
  Profile out;
  out.meta = profile.meta;
  out.frames = profile.frames;
  out.counters = profile.counters;

  std::vector<bool> root_frame;
  if (!options.root.empty()) {
    const WholeNameRegex regex(options.root);
    root_frame.resize(profile.frames.size());
    bool any = false;
    for (size_t f = 0; f < profile.frames.size(); ++f) {
      const std::string name = FrameDisplayName(profile.frames.at(static_cast<uint32_t>(f)));
      root_frame[f] = name == options.root || regex.Matches(name);
      any = any || root_frame[f];
    }
    if (!any) {
      return MakeError("--root '" + options.root +
                       "' matches no frame; give an exact function name or a regex matching a "
                       "whole name (list the names with arcprof report --by sym)");
    }
  }

  // Pass 1: the selected threads, restricted to the --root subtrees.
  std::vector<uint32_t> mapped;
  const size_t threads = std::min(profile.threads.size(), profile.trees.size());
  for (size_t t = 0; t < threads; ++t) {
    const ThreadRecord& thread = profile.threads[t];
    if (!options.filter.Matches(thread)) continue;
    const uint32_t index = out.ThreadIndex(thread.pid, thread.tid);
    out.threads[index] = thread;
    CallTree& tree = out.trees[index];
    const auto& nodes = profile.trees[t].nodes();
    mapped.assign(nodes.size(), kDropped);
    if (!nodes.empty()) mapped[0] = 0;
    // With --root, a node is kept only at or below a matching frame; node 0 is
    // not "below" anything, so the first match on a path starts a new top.
    const bool restrict = !root_frame.empty();
    if (!restrict && !nodes.empty()) {  // samples without any frame stay with their thread
      tree.mutable_nodes()[0].n += nodes[0].n;
      tree.mutable_nodes()[0].base += nodes[0].base;
      tree.mutable_nodes()[0].offcpu += nodes[0].offcpu;
    }
    for (size_t i = 1; i < nodes.size(); ++i) {
      const CallTree::Node& node = nodes[i];
      // Capture trees list parents first; anything else is left out, not misread.
      if (node.parent >= i || node.frame >= profile.frames.size()) continue;
      uint32_t parent = mapped[node.parent];
      if (restrict && node.parent == 0) parent = kDropped;
      if (parent == kDropped) {
        if (!restrict || !root_frame[node.frame]) {
          continue;
        }
        parent = 0;
      }
      const uint32_t id = tree.Child(parent, node.frame);
      auto& target = tree.mutable_nodes()[id];
      target.n += node.n;
      target.base += node.base;
      target.offcpu += node.offcpu;
      mapped[i] = id;
    }
  }
  if (options.min_percent <= 0) return out;

  // Pass 2: --min. Cumulative values bottom-up (children follow parents).
  uint64_t total = 0;
  std::vector<std::vector<uint64_t>> cum(out.trees.size());
  for (size_t t = 0; t < out.trees.size(); ++t) {
    const auto& nodes = out.trees[t].nodes();
    cum[t].resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) cum[t][i] = nodes[i].base;
    for (size_t i = nodes.size(); i-- > 1;) cum[t][nodes[i].parent] += cum[t][i];
    total += nodes.empty() ? 0 : cum[t][0];
  }
  const double threshold = options.min_percent / 100.0 * static_cast<double>(total);
  FrameRecord pruned_frame;
  pruned_frame.symbol = kPrunedFrameName;
  const uint32_t pruned = out.frames.Intern(pruned_frame);
  for (size_t t = 0; t < out.trees.size(); ++t) {
    const auto& nodes = out.trees[t].nodes();
    CallTree kept;
    mapped.assign(nodes.size(), kDropped);
    if (!nodes.empty()) mapped[0] = 0;
    std::vector<uint64_t> subtree_n(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) subtree_n[i] = nodes[i].n;
    for (size_t i = nodes.size(); i-- > 1;) subtree_n[nodes[i].parent] += subtree_n[i];
    for (size_t i = 0; i < nodes.size(); ++i) {
      uint32_t id = 0;
      if (i != 0) {
        const uint32_t parent = mapped[nodes[i].parent];
        if (parent == kDropped) continue;  // inside a pruned subtree: already counted
        if (static_cast<double>(cum[t][i]) < threshold) {
          const uint32_t bucket = kept.Child(parent, pruned);
          kept.mutable_nodes()[bucket].n += subtree_n[i];
          kept.mutable_nodes()[bucket].base += cum[t][i];
          continue;
        }
        id = kept.Child(parent, nodes[i].frame);
      }
      kept.mutable_nodes()[id].n += nodes[i].n;
      kept.mutable_nodes()[id].base += nodes[i].base;
      kept.mutable_nodes()[id].offcpu += nodes[i].offcpu;
      mapped[i] = id;
    }
    out.trees[t] = std::move(kept);
  }
  return out;
}

}  // namespace arcprof::reports
