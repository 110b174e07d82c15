// The arcflow model on the one call tree, built from a capture, and its
// transforms (merge threads, --root, --min), each one of model::CallTree's.
#include "reports/arcflow.h"

#include "model/frame_name.h"
#include "model/name_regex.h"

#include <utility>

#include <fmt/format.h>

namespace arcprof::reports {
using namespace arcprof::model;

namespace {
// The module ids that tell consumer kinds apart (interned in this order by the
// constructor); functions have module 0.
constexpr uint32_t kThreadModule = 1;
constexpr uint32_t kPrunedModule = 2;
}  // namespace

ArcflowProfile::ArcflowProfile() {
  consumers.InternModule("[thread]");
  consumers.InternModule("[pruned]");
}

uint32_t ArcflowProfile::InternConsumer(std::string_view name, ConsumerKind kind) {
  const uint32_t module = kind == ConsumerKind::kThread   ? kThreadModule
                          : kind == ConsumerKind::kPruned ? kPrunedModule
                                                          : 0;
  return InternName(consumers, name, module);
}

ConsumerKind ArcflowProfile::kind(uint32_t consumer) const {
  if (consumer == kNone) return ConsumerKind::kRoot;
  switch (consumers.at(consumer).module) {
    case kThreadModule: return ConsumerKind::kThread;
    case kPrunedModule: return ConsumerKind::kPruned;
    default: return ConsumerKind::kFunction;
  }
}

const std::string& ArcflowProfile::name(uint32_t consumer) const {
  static const std::string kRootName = "[root]";
  return consumer == kNone ? kRootName : consumers.at(consumer).symbol;
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
  // Frames with the same display name are one consumer.
  DisplayNames consumer_of(profile.frames, model.consumers);

  size_t profile_nodes = 1;
  for (const ThreadRecord& thread : profile.threads) profile_nodes += thread.tree.size();
  CallTree& tree = model.tree;
  tree.Reserve(profile_nodes);

  constexpr uint32_t kNone = ArcflowProfile::kNone;
  constexpr uint32_t kRoot = ArcflowProfile::kRootNode;
  uint32_t merged_thread = kNone;
  std::vector<uint32_t> model_node;
  const size_t thread_count = profile.threads.size();
  for (size_t t = 0; t < thread_count; ++t) {
    const ThreadRecord& thread = profile.threads[t];
    if (!filter.Matches(thread)) continue;
    const auto& nodes = profile.threads[t].tree.nodes();
    const std::vector<uint64_t> base = metric.Values(thread);
    uint32_t thread_node;
    if (merge_threads && !thread.host.empty()) {
      thread_node = tree.Child(tree.Child(kRoot, model.InternConsumer("host_" + thread.host, ConsumerKind::kThread)),
                               model.InternConsumer("all_threads", ConsumerKind::kThread));
    } else if (merge_threads) {
      if (merged_thread == kNone) {
        merged_thread = tree.Child(kRoot, model.InternConsumer("all_threads", ConsumerKind::kThread));
      }
      thread_node = merged_thread;
    } else {
      // In a merge of several machines the host is the level above the threads.
      const uint32_t parent =
          thread.host.empty()
              ? kRoot
              : tree.Child(kRoot, model.InternConsumer("host_" + thread.host, ConsumerKind::kThread));
      thread_node = tree.Child(
          parent, model.InternConsumer(fmt::format("{}_{}_{}", thread.pid, thread.tid, thread.comm),
                                       ConsumerKind::kThread));
    }
    model_node.assign(nodes.size(), kNone);
    model_node[0] = thread_node;
    tree.Add(thread_node, nodes[0].n, kSamplesValue, base[0]);
    // Parents precede their children (model/profile.h, CallTree).
    for (uint32_t i = 1; i < nodes.size(); ++i) {
      const CallTree::Node& node = nodes[i];
      const uint32_t parent = model_node[node.parent];
      if (parent == kNone) continue;
      model_node[i] = tree.Child(parent, consumer_of(node.frame));
      tree.Add(model_node[i], node.n, kSamplesValue, base[i]);
    }
  }
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
