#include "reports/export_scope.h"

#include "model/frame_name.h"
#include "model/metric.h"
#include "model/name_regex.h"

#include <vector>

namespace arcprof::reports {
using namespace arcprof::model;

Result<Profile> ScopeProfile(const Profile& profile, const ExportOptions& options) {
  if (!(options.min_percent >= 0 && options.min_percent <= 100)) {
    return MakeError("--min must be a percentage between 0 and 100");
  }
  Profile out;
  out.meta = profile.meta;
  out.frames = profile.frames;
  out.counters = profile.counters;
  out.value_types = profile.value_types;

  std::vector<bool> root_frame;
  if (!options.root.empty()) {
    const WholeNameRegex regex(options.root);
    root_frame.resize(profile.frames.size());
    bool any = false;
    for (size_t f = 0; f < profile.frames.size(); ++f) {
      const std::string name = FrameDisplayName(profile.frames, static_cast<uint32_t>(f));
      root_frame[f] = regex.MatchesName(name);
      any = any || root_frame[f];
    }
    if (!any) {
      return MakeError("--root '" + options.root +
                       "' matches no frame; give an exact function name or a regex matching a "
                       "whole name (list the names with arcprof report --by sym)");
    }
  }

  // Pass 1: the selected threads, restricted to the --root subtrees.
  for (const ThreadRecord& thread : profile.threads) {
    if (!options.filter.Matches(thread)) continue;
    const uint32_t index = out.ThreadIndex(thread);
    ThreadRecord& dest = out.threads[index];
    CallTree tree = std::move(dest.tree);
    dest = ThreadRecord{thread.pid,  thread.tid,      thread.comm,             thread.process_comm, thread.cmdline,
                        thread.host, thread.identity, thread.process_start_ns, {}};
    // With --root, a node is kept only at or below a matching frame; samples
    // without any frame stay with their thread only without --root.
    if (root_frame.empty()) {
      tree.Merge(thread.tree);
    } else {
      tree.Merge(thread.tree.Rerooted([&](uint32_t frame) {
        return frame < root_frame.size() && root_frame[frame];
      }));
    }
    dest.tree = std::move(tree);
  }
  if (options.min_percent <= 0) return out;

  // Pass 2: --min, a share of the whole profile's cumulative --metric value
  // (the metric is resolved on the whole capture: its per-thread rates).
  auto metric = Metric::Select(profile, options.metric);
  if (!metric) return metric.error();
  uint64_t total = 0;
  std::vector<std::vector<uint64_t>> cum(out.threads.size());
  for (size_t t = 0; t < out.threads.size(); ++t) {
    cum[t] = metric->Values(out.threads[t]);
    out.threads[t].tree.Accumulate(cum[t]);
    total += cum[t].empty() ? 0 : cum[t][0];
  }
  const double threshold = options.min_percent / 100.0 * static_cast<double>(total);
  FrameRecord pruned_frame;
  pruned_frame.symbol = kPrunedFrameName;
  const uint32_t pruned = out.frames.Intern(pruned_frame);
  for (size_t t = 0; t < out.threads.size(); ++t) {
    CallTree& tree = out.threads[t].tree;
    tree = tree.Pruned([&](uint32_t node) { return static_cast<double>(cum[t][node]) >= threshold; },
                       pruned);
  }
  return out;
}

}  // namespace arcprof::reports
