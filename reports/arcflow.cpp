// The arcflow model and its transforms (merge threads, --root, --min).
#include "reports/arcflow.h"

#include "model/frame_name.h"
#include "model/name_regex.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace arcprof::reports {
using namespace arcprof::model;

ArcflowModel::ArcflowModel() {
  consumers_.push_back(Consumer{"[root]", ConsumerKind::kRoot});
  nodes_.push_back(Node{kNone, 0, kNone, kNone, 0, 0, 0});
}

uint32_t ArcflowModel::InternConsumer(std::string_view name, ConsumerKind kind) {
  std::string key;
  key.reserve(name.size() + 1);
  key.push_back(static_cast<char>(kind));
  key.append(name);
  auto [it, inserted] = consumer_index_.try_emplace(std::move(key),
                                                     static_cast<uint32_t>(consumers_.size()));
  if (inserted) consumers_.push_back(Consumer{std::string(name), kind});
  return it->second;
}

uint32_t ArcflowModel::Child(uint32_t parent, uint32_t consumer) {
  const uint64_t key = static_cast<uint64_t>(parent) << 32 | consumer;
  bool inserted = false;
  const uint32_t id = child_index_.FindOrInsert(key, static_cast<uint32_t>(nodes_.size()), inserted);
  if (inserted) {
    Node node;
    node.parent = parent;
    node.consumer = consumer;
    node.next_sibling = nodes_[parent].first_child;
    nodes_[parent].first_child = id;
    nodes_.push_back(node);
  }
  return id;
}

void ArcflowModel::Finalize() {
  for (Node& node : nodes_) node.cum = node.base;
  // Children always come after their parent, so one backward pass suffices.
  for (size_t i = nodes_.size(); i-- > 1;) nodes_[nodes_[i].parent].cum += nodes_[i].cum;
}

std::vector<uint32_t> ArcflowModel::Children(uint32_t node_id) const {
  std::vector<uint32_t> children;
  for (uint32_t c = nodes_[node_id].first_child; c != kNone; c = nodes_[c].next_sibling)
    children.push_back(c);
  std::reverse(children.begin(), children.end());
  return children;
}

std::vector<uint32_t> ArcflowModel::Depths() const {
  std::vector<uint32_t> depth(nodes_.size(), 0);
  for (size_t i = 1; i < nodes_.size(); ++i) depth[i] = depth[nodes_[i].parent] + 1;
  return depth;
}

// ---------------------------------------------------------------- from a Profile


ArcflowModel ArcflowFromProfile(const Profile& profile, const ThreadFilter& filter,
                                bool merge_threads, const Metric& metric) {
  ArcflowModel model;
  model.bindings = ArcflowBindings{profile.meta.consumers,
                                   metric.unit().empty() ? profile.meta.unit : metric.unit(),
                                   profile.meta.occurrences};
  model.frequency_hz = profile.meta.frequency_hz;

  std::vector<uint32_t> consumer_of_frame(profile.frames.size(), ArcflowModel::kNone);
  auto consumer_of = [&](uint32_t frame) {
    if (frame >= consumer_of_frame.size()) {
      return model.InternConsumer("[bad frame id]", ConsumerKind::kFunction);
    }
    uint32_t& c = consumer_of_frame[frame];
    if (c == ArcflowModel::kNone) {
      c = model.InternConsumer(FrameDisplayName(profile.frames, frame), ConsumerKind::kFunction);
    }
    return c;
  };

  size_t profile_nodes = 1;
  for (const ThreadRecord& thread : profile.threads) profile_nodes += thread.tree.size();
  model.Reserve(profile_nodes);

  uint32_t merged_thread = ArcflowModel::kNone;
  std::vector<uint32_t> model_node;
  const size_t thread_count = profile.threads.size();
  for (size_t t = 0; t < thread_count; ++t) {
    const ThreadRecord& thread = profile.threads[t];
    if (!filter.Matches(thread)) continue;
    const auto& nodes = profile.threads[t].tree.nodes();
    const std::vector<uint64_t> base = metric.Values(thread);
    uint32_t thread_node;
    if (merge_threads && !thread.host.empty()) {
      thread_node = model.Child(model.Child(ArcflowModel::kRootNode,
                                            model.InternConsumer("host_" + thread.host, ConsumerKind::kThread)),
                                model.InternConsumer("all_threads", ConsumerKind::kThread));
    } else if (merge_threads) {
      if (merged_thread == ArcflowModel::kNone) {
        merged_thread = model.Child(ArcflowModel::kRootNode,
                                    model.InternConsumer("all_threads", ConsumerKind::kThread));
      }
      thread_node = merged_thread;
    } else {
      // In a merge of several machines the host is the level above the threads.
      const uint32_t parent =
          thread.host.empty() ? ArcflowModel::kRootNode
                              : model.Child(ArcflowModel::kRootNode,
                                            model.InternConsumer("host_" + thread.host, ConsumerKind::kThread));
      thread_node = model.Child(
          parent, model.InternConsumer(fmt::format("{}_{}_{}", thread.pid, thread.tid, thread.comm),
                                       ConsumerKind::kThread));
    }
    model_node.assign(nodes.size(), ArcflowModel::kNone);
    model_node[0] = thread_node;
    model.Add(thread_node, nodes[0].n, base[0]);
    // Parents precede their children (model/profile.h, CallTree).
    for (uint32_t i = 1; i < nodes.size(); ++i) {
      const CallTree::Node& node = nodes[i];
      const uint32_t parent = model_node[node.parent];
      if (parent == ArcflowModel::kNone) continue;
      model_node[i] = model.Child(parent, consumer_of(node.frame));
      model.Add(model_node[i], node.n, base[i]);
    }
  }
  model.Finalize();
  return model;
}

// ---------------------------------------------------------------- transforms

namespace {

// Copies models node by node, merging equal contexts in the destination.
class Grafter {
 public:
  Grafter(const ArcflowModel& src, ArcflowModel& dst)
      : src_(src), dst_(dst), consumer_map_(src.consumers().size(), ArcflowModel::kNone) {}

  uint32_t MapConsumer(uint32_t src_consumer) {
    uint32_t& c = consumer_map_[src_consumer];
    if (c == ArcflowModel::kNone) {
      const auto& consumer = src_.consumer(src_consumer);
      c = dst_.InternConsumer(consumer.name, consumer.kind);
    }
    return c;
  }

  // Adds a copy of src node `src_node` (its n and base, then its whole
  // subtree) as a child of `dst_parent`; returns the destination node.
  uint32_t CopySubtree(uint32_t src_node, uint32_t dst_parent) {
    const uint32_t top = CopyNode(src_node, dst_parent);
    CopyDescendants(src_node, top);
    return top;
  }

  // Adds copies of the descendants of `src_node` under `dst_node`.
  void CopyDescendants(uint32_t src_node, uint32_t dst_node) {
    stack_.clear();
    stack_.emplace_back(src_node, dst_node);
    while (!stack_.empty()) {
      auto [s, d] = stack_.back();
      stack_.pop_back();
      for (uint32_t c = src_.node(s).first_child; c != ArcflowModel::kNone;
           c = src_.node(c).next_sibling) {
        stack_.emplace_back(c, CopyNode(c, d));
      }
    }
  }

  uint32_t CopyNode(uint32_t src_node, uint32_t dst_parent) {
    const auto& node = src_.node(src_node);
    const uint32_t d = dst_.Child(dst_parent, MapConsumer(node.consumer));
    dst_.Add(d, node.n, node.base);
    return d;
  }

 private:
  const ArcflowModel& src_;
  ArcflowModel& dst_;
  std::vector<uint32_t> consumer_map_;
  std::vector<std::pair<uint32_t, uint32_t>> stack_;
};

ArcflowModel EmptyLike(const ArcflowModel& model) {
  ArcflowModel out;
  out.bindings = model.bindings;
  out.frequency_hz = model.frequency_hz;
  return out;
}

}  // namespace

ArcflowModel MergeThreads(const ArcflowModel& model) {
  ArcflowModel out = EmptyLike(model);
  Grafter grafter(model, out);
  const auto& root = model.node(ArcflowModel::kRootNode);
  out.Add(ArcflowModel::kRootNode, root.n, root.base);
  uint32_t merged = ArcflowModel::kNone;
  for (uint32_t t : model.Children(ArcflowModel::kRootNode)) {
    if (model.consumer(model.node(t).consumer).kind != ConsumerKind::kThread) {
      grafter.CopySubtree(t, ArcflowModel::kRootNode);
      continue;
    }
    if (merged == ArcflowModel::kNone) {
      merged = out.Child(ArcflowModel::kRootNode,
                         out.InternConsumer("all_threads", ConsumerKind::kThread));
    }
    out.Add(merged, model.node(t).n, model.node(t).base);
    grafter.CopyDescendants(t, merged);
  }
  out.Finalize();
  return out;
}

Result<ArcflowModel> RestrictToRoot(const ArcflowModel& model, const std::string& pattern) {
  std::vector<bool> matches(model.consumers().size(), false);
  // A pattern that is not a valid regex still matches an exact name ("operator()(").
  const WholeNameRegex regex(pattern);
  bool any = false;
  for (size_t c = 0; c < model.consumers().size(); ++c) {
    const auto& consumer = model.consumer(static_cast<uint32_t>(c));
    if (consumer.kind != ConsumerKind::kFunction) continue;
    matches[c] = consumer.name == pattern || regex.Matches(consumer.name);
    any = any || matches[c];
  }
  if (!any) {
    return MakeError("--root '" + pattern +
                     "' matches no frame; give an exact function name or a regex matching a "
                     "whole name (list the names with --view xprof)");
  }

  ArcflowModel out = EmptyLike(model);
  Grafter grafter(model, out);
  std::vector<uint32_t> stack;
  for (uint32_t t : model.Children(ArcflowModel::kRootNode)) {
    uint32_t out_thread = ArcflowModel::kNone;
    stack.assign(1, t);
    while (!stack.empty()) {
      const uint32_t v = stack.back();
      stack.pop_back();
      for (uint32_t c = model.node(v).first_child; c != ArcflowModel::kNone;
           c = model.node(c).next_sibling) {
        if (!matches[model.node(c).consumer]) {
          stack.push_back(c);
          continue;
        }
        // The outermost match: its subtree, nested matches included, is the task.
        if (out_thread == ArcflowModel::kNone) {
          out_thread = out.Child(ArcflowModel::kRootNode, grafter.MapConsumer(model.node(t).consumer));
        }
        grafter.CopySubtree(c, out_thread);
      }
    }
  }
  out.Finalize();
  return out;
}

ArcflowModel Prune(const ArcflowModel& model, double min_pct) {
  if (min_pct <= 0) return model;
  const long double threshold =
      static_cast<long double>(model.total()) * static_cast<long double>(min_pct) / 100.0L;
  ArcflowModel out = EmptyLike(model);
  Grafter grafter(model, out);
  const auto& root = model.node(ArcflowModel::kRootNode);
  out.Add(ArcflowModel::kRootNode, root.n, root.base);
  std::vector<std::pair<uint32_t, uint32_t>> stack{{ArcflowModel::kRootNode, ArcflowModel::kRootNode}};
  while (!stack.empty()) {
    auto [s, d] = stack.back();
    stack.pop_back();
    uint64_t pruned_n = 0;
    uint64_t pruned_cum = 0;
    for (uint32_t c = model.node(s).first_child; c != ArcflowModel::kNone;
         c = model.node(c).next_sibling) {
      const auto& child = model.node(c);
      if (static_cast<long double>(child.cum) < threshold) {
        pruned_n += child.n;
        pruned_cum += child.cum;
      } else {
        stack.emplace_back(c, grafter.CopyNode(c, d));
      }
    }
    if (pruned_n != 0 || pruned_cum != 0) {
      const uint32_t p = out.Child(d, out.InternConsumer("[pruned]", ConsumerKind::kPruned));
      out.Add(p, pruned_n, pruned_cum);
    }
  }
  out.Finalize();
  return out;
}

}  // namespace arcprof::reports
