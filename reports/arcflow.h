// The arcflow model (Alexander et al., IBM Systems Journal 39(1), 2000): a set
// of triples (consumer context X, occurrences n, resource consumed Y) plus the
// bindings Z that name the consumer kind, the unit of Y and the meaning of n.
// It is stored as a tree: the context of a node is the path of consumer ids
// from the root to it. Here node 0 is a synthetic root, its children are the
// threads, and below each thread the call stack from the outermost frame to
// the leaf. The model is unitless: the same code reports samples, CPU time,
// calls or any other counter. See docs/arcflow.md.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "reports/arcflow_index.h"
#include "model/metric.h"
#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

struct ArcflowBindings {
  std::string consumers = "functions";  // what a consumer is
  std::string unit = "samples";         // the unit of base and cum
  std::string occurrences = "samples";  // the meaning of n
};

enum class ConsumerKind : uint8_t {
  kRoot = 0,      // the synthetic root, parent of the threads
  kThread = 1,    // "pid_tid_comm", or "all_threads" when merged
  kFunction = 2,  // a frame of a call stack
  kPruned = 3,    // "[pruned]": what --min removed below a node
};

class ArcflowModel {
 public:
  static constexpr uint32_t kRootNode = 0;
  static constexpr uint32_t kNone = 0xffffffffu;

  struct Node {
    uint32_t parent = kNone;
    uint32_t consumer = 0;
    uint32_t first_child = kNone;
    uint32_t next_sibling = kNone;
    uint64_t n = 0;     // occurrences of this context (samples or calls)
    uint64_t base = 0;  // resource consumed in the node itself
    uint64_t cum = 0;   // base plus the cum of the children; set by Finalize()
  };
  struct Consumer {
    std::string name;
    ConsumerKind kind = ConsumerKind::kFunction;
  };

  ArcflowModel();

  // Returns the id of the consumer (name, kind), adding it when new.
  uint32_t InternConsumer(std::string_view name, ConsumerKind kind);
  // Finds or creates the child of `parent` for `consumer`. A child always has
  // a larger index than its parent; Finalize() relies on it.
  uint32_t Child(uint32_t parent, uint32_t consumer);
  void Add(uint32_t node, uint64_t n, uint64_t base) {
    nodes_[node].n += n;
    nodes_[node].base += base;
  }
  void Reserve(size_t nodes) {
    nodes_.reserve(nodes);
    child_index_.Reserve(nodes);
  }
  // Computes cum bottom-up. Call after the last Add().
  void Finalize();

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(uint32_t id) const { return nodes_[id]; }
  const std::vector<Consumer>& consumers() const { return consumers_; }
  const Consumer& consumer(uint32_t id) const { return consumers_[id]; }
  const std::string& name(uint32_t node_id) const { return consumers_[nodes_[node_id].consumer].name; }
  uint64_t total() const { return nodes_[kRootNode].cum; }
  // The children of a node, in creation order.
  std::vector<uint32_t> Children(uint32_t node_id) const;
  // Depth of every node (root 0, threads 1, outermost frames 2).
  std::vector<uint32_t> Depths() const;

  ArcflowBindings bindings;
  // Sampling frequency when the unit is "samples"; 0 when unknown. Used by --units ms.
  uint64_t frequency_hz = 0;

 private:
  std::vector<Node> nodes_;
  std::vector<Consumer> consumers_;
  FlatIndex child_index_;  // (parent << 32 | consumer) -> node
  std::unordered_map<std::string, uint32_t> consumer_index_;  // kind byte + name -> consumer
};

// ---------------------------------------------------------------- inputs

// Threads are selected by the one thread filter of every report (model/thread_filter.h).

// (a) Stacks from a capture: n is each node's occurrences, base its value in
// `metric` (samples unless told; the unit binding is the metric's). Frames
// with the same display name become one consumer.
ArcflowModel ArcflowFromProfile(const model::Profile& profile, const model::ThreadFilter& filter,
                                bool merge_threads, const model::Metric& metric = {});
// A frame's consumer name is model::FrameDisplayName (model/frame_name.h).

// (b) A complete call tree: one line per context, "<consumer>... <n> <Y>"
// (whitespace separated), "#!" directives for the bindings and threads.
Result<ArcflowModel> ParseArcflowCallTree(std::string_view text);
// (c) A start/end event trace: "<metric> > name", "<metric> < name",
// "<metric> thread <tid>|<pid>/<tid> [name]".
Result<ArcflowModel> ParseArcflowEventTrace(std::string_view text);
// Picks (b) or (c) from the first record line.
Result<ArcflowModel> ParseArcflowText(std::string_view text);

// ---------------------------------------------------------------- transforms

// Folds every thread into one "all_threads" consumer.
ArcflowModel MergeThreads(const ArcflowModel& model);
// Keeps the subtrees under the outermost nodes whose consumer matches
// `pattern` (exact name, or a regex matching the whole name), re-rooted
// under their thread. Error when the pattern matches no frame.
Result<ArcflowModel> RestrictToRoot(const ArcflowModel& model, const std::string& pattern);
// Removes every node whose cum is below `min_pct` of the total; what a node
// loses is kept in one "[pruned]" child so that cum and the xarc invariants
// still add up.
ArcflowModel Prune(const ArcflowModel& model, double min_pct);

// ---------------------------------------------------------------- reports

struct ArcflowLine {
  uint32_t consumer = 0;
  uint64_t n = 0;
  uint64_t base = 0;
  uint64_t cum = 0;
};

struct XarcStanza {
  ArcflowLine self;
  std::vector<ArcflowLine> parents;   // sorted by cum descending
  std::vector<ArcflowLine> children;  // sorted by cum descending
};

// One stanza per consumer except the root, sorted by cum descending. A
// parent with consumer id kNone stands for the synthetic root.
std::vector<XarcStanza> ComputeXarc(const ArcflowModel& model);

enum class ArcflowSort { kBase, kCum };
// One line per consumer except the root.
std::vector<ArcflowLine> ComputeXprof(const ArcflowModel& model, ArcflowSort sort);

enum class ArcflowView { kXtree, kXarc, kXprof };
enum class ArcflowFormat { kText, kJson };
enum class ArcflowUnits { kSamples, kMs, kPct };

struct ArcflowOptions {
  ArcflowView view = ArcflowView::kXtree;
  ArcflowFormat format = ArcflowFormat::kText;
  double min_pct = 0;      // --min PCT; 0 keeps everything
  std::string root;        // --root NAME|REGEX; empty = whole profile
  bool merge_threads = false;
  ArcflowSort sort = ArcflowSort::kBase;  // xprof only
  ArcflowUnits units = ArcflowUnits::kSamples;
  model::ThreadFilter filter;  // applies to Profile input only
  // --metric (model/metric.h), Profile input only. With --units ms and PTT
  // in the capture, samples are read as the measured CPU time (cpu).
  std::string metric = "samples";
};

Result<ArcflowView> ParseArcflowView(std::string_view text);
Result<ArcflowSort> ParseArcflowSort(std::string_view text);
Result<ArcflowUnits> ParseArcflowUnits(std::string_view text);

// Builds the model from a capture, applies --merge-threads, --root and --min,
// and writes the chosen view.
Result<void> RenderArcflowView(const model::Profile& profile, const ArcflowOptions& options,
                               std::ostream& out);
// The same for a model read from a call tree or an event trace (options.filter
// is ignored: such inputs have no pid/tid table to filter on).
Result<void> RenderArcflowModel(const ArcflowModel& model, const ArcflowOptions& options,
                                std::ostream& out);

}  // namespace arcprof::reports
