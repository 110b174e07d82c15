// The arcflow model on the one call tree, built from a capture, and its
// transforms (merge threads, --root, --min), each one of model::CallTree's.
#include "reports/arcflow.h"

#include "model/fold_by_name.h"
#include "model/name_regex.h"

#include <utility>

#include <fmt/format.h>

namespace arcprof::reports {
using namespace arcprof::model;

namespace {
NameKind KindName(ConsumerKind kind) {
  switch (kind) {
    case ConsumerKind::kThread: return NameKind::kGroup;
    case ConsumerKind::kPruned: return NameKind::kPruned;
    case ConsumerKind::kRoot:
    case ConsumerKind::kFunction: break;
  }
  return NameKind::kFunction;
}
}  // namespace

ArcflowProfile::ArcflowProfile() = default;

uint32_t ArcflowProfile::InternConsumer(std::string_view name, ConsumerKind kind) {
  return consumers.Intern(name, KindName(kind));
}

ConsumerKind ArcflowProfile::kind(uint32_t consumer) const {
  if (consumer == kNone) return ConsumerKind::kRoot;
  switch (consumers.kind(consumer)) {
    case NameKind::kGroup: return ConsumerKind::kThread;
    case NameKind::kPruned: return ConsumerKind::kPruned;
    default: return ConsumerKind::kFunction;
  }
}

const std::string& ArcflowProfile::name(uint32_t consumer) const {
  static const std::string kRootName = "[root]";
  return consumer == kNone ? kRootName : consumers.name(consumer);
}

ArcflowProfile ArcflowProfile::EmptyLike() const {
  ArcflowProfile out;
  out.consumers = consumers;
  out.bindings = bindings;
  out.frequency_hz = frequency_hz;
  return out;
}

// ---------------------------------------------------------------- from a Profile

ArcflowProfile ArcflowFromProfile(const Profile& profile, const ThreadFilter& filter,
                                  bool merge_threads, const Metric& metric) {
  ArcflowProfile model;
  // A capture's consumers are functions and n counts samples; base is in the
  // metric's unit (samples: value type 0's name).
  model.bindings.unit = metric.unit().empty() ? profile.value_types[kSamplesValue].name : metric.unit();
  model.frequency_hz = profile.meta.frequency_hz;
  // The threads are the level above the frames ("pid_tid_comm", or one
  // "all_threads"); in a merge of several machines the host is the level
  // above them. Frames with the same display name are one consumer.
  FoldOptions fold;
  fold.kinds = false;
  fold.empty_threads = true;
  fold.levels = [merge_threads](const ThreadRecord& thread, std::vector<std::string>& levels) {
    if (!thread.host.empty()) levels.push_back("host_" + thread.host);
    levels.push_back(merge_threads ? std::string("all_threads")
                                   : fmt::format("{}_{}_{}", thread.pid, thread.tid, thread.comm));
  };
  NameFold folded = FoldByName(profile, filter, metric, fold);
  model.consumers = std::move(folded.names);
  model.tree = std::move(folded.tree);
  return model;
}

// ---------------------------------------------------------------- transforms

ArcflowProfile MergeThreads(const ArcflowProfile& model) {
  ArcflowProfile out = model.EmptyLike();
  // Every thread consumer becomes "all_threads"; CallTree::Merge then makes
  // one node of the threads and of every context they share.
  const uint32_t all = out.InternConsumer("all_threads", ConsumerKind::kThread);
  std::vector<uint32_t> frame_map(model.consumers.size());
  for (uint32_t c = 0; c < frame_map.size(); ++c) {
    frame_map[c] = model.kind(c) == ConsumerKind::kThread ? all : c;
  }
  out.tree.Merge(model.tree, frame_map);
  return out;
}

Result<ArcflowProfile> RestrictToRoot(const ArcflowProfile& model, const std::string& pattern) {
  std::vector<bool> matches(model.consumers.size(), false);
  // A pattern that is not a valid regex still matches an exact name ("operator()(").
  const WholeNameRegex regex(pattern);
  bool any = false;
  for (uint32_t c = 0; c < matches.size(); ++c) {
    if (model.kind(c) != ConsumerKind::kFunction) continue;
    matches[c] = regex.MatchesName(model.name(c));
    any = any || matches[c];
  }
  if (!any) {
    return MakeError("--root '" + pattern +
                     "' matches no frame; give an exact function name or a regex matching a "
                     "whole name (list the names with --view xprof)");
  }
  // The outermost matches' subtrees, nested matches included, are the task,
  // each under (a copy without values of) its thread.
  ArcflowProfile out = model.EmptyLike();
  out.tree = model.tree.Rerooted(
      [&](uint32_t consumer) { return consumer < matches.size() && matches[consumer]; },
      /*under_top=*/true);
  return out;
}

ArcflowProfile Prune(const ArcflowProfile& model, double min_pct) {
  if (min_pct <= 0) return model;
  const long double threshold =
      static_cast<long double>(model.total()) * static_cast<long double>(min_pct) / 100.0L;
  const std::vector<uint64_t> cum = model.tree.Cumulative();
  ArcflowProfile out = model.EmptyLike();
  const uint32_t pruned = out.InternConsumer("[pruned]", ConsumerKind::kPruned);
  // A [pruned] child holds the cum of what it replaces and the occurrences of
  // the contexts cut, so that cum and the xarc invariants still add up.
  out.tree = model.tree.Pruned(
      [&](uint32_t node) { return !(static_cast<long double>(cum[node]) < threshold); }, pruned,
      CallTree::BucketN::kTopNodes);
  return out;
}

}  // namespace arcprof::reports
