// The arcflow model (Alexander et al., IBM Systems Journal 39(1), 2000): a set
// of triples (consumer context X, occurrences n, resource consumed Y) plus the
// bindings Z that name the consumer kind, the unit of Y and the meaning of n.
// It is stored in the model's one call tree (model::CallTree): the context of
// a node is the path of consumers from the root to it. Node 0 is a synthetic
// root, its children are the threads, and below each thread the call stack
// from the outermost frame to the leaf. The model is unitless: the same code
// reports samples, CPU time, calls or any other counter. See docs/arcflow.md.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/metric.h"
#include "model/name_pool.h"
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

// What the three inputs produce and the views read: one call tree over a
// pool of consumers (model/name_pool.h). A node's frame id is its consumer, a
// name of `consumers` whose kind says the consumer's kind: a function by its
// display name (NameKind::kFunction), so that frames sharing one are one
// consumer; a thread as "pid_tid_comm" (kGroup); "[pruned]" (kPruned).
// A node's n is its occurrences, its value 0 the resource it consumed itself
// (base); cum is base plus everything below (model::CallTree::Cumulative).
struct ArcflowProfile {
  static constexpr uint32_t kRootNode = 0;
  // The consumer of the root node (CallTree::kNoFrame), and "no consumer".
  static constexpr uint32_t kNone = model::CallTree::kNoFrame;

  ArcflowProfile();

  model::NamePool consumers;
  model::CallTree tree;
  ArcflowBindings bindings;
  // Sampling frequency when the unit is "samples"; 0 when unknown. Used by --units ms.
  uint64_t frequency_hz = 0;

  // Returns the id of the consumer (name, kind), adding it when new.
  uint32_t InternConsumer(std::string_view name, ConsumerKind kind);
  // The kind and name of a consumer; kNone is the root ("[root]").
  ConsumerKind kind(uint32_t consumer) const;
  const std::string& name(uint32_t consumer) const;
  // The consumer of node `node`.
  uint32_t consumer_of(uint32_t node) const { return tree.nodes()[node].frame; }
  // Σ base: the root's cum.
  uint64_t total() const { return tree.total(model::kSamplesValue); }
  // A profile with these consumers and bindings and an empty tree.
  ArcflowProfile EmptyLike() const;
};

// ---------------------------------------------------------------- inputs

// Threads are selected by the one thread filter of every report (model/thread_filter.h).

// (a) Stacks from a capture: the fold by name (model/fold_by_name.h) with the
// threads as the level above the frames; n is each node's occurrences, base
// its value in `metric` (samples unless told; the unit binding is the
// metric's). Frames with the same display name become one consumer.
ArcflowProfile ArcflowFromProfile(const model::Profile& profile, const model::ThreadFilter& filter,
                                bool merge_threads, const model::Metric& metric = {});
// A frame's consumer name is model::FrameDisplayName (model/frame_name.h).

// (b) A complete call tree: one line per context, "<consumer>... <n> <Y>"
// (whitespace separated), "#!" directives for the bindings and threads.
Result<ArcflowProfile> ParseArcflowCallTree(std::string_view text);
// (c) A start/end event trace: "<metric> > name", "<metric> < name",
// "<metric> thread <tid>|<pid>/<tid> [name]".
Result<ArcflowProfile> ParseArcflowEventTrace(std::string_view text);
// Picks (b) or (c) from the first record line.
Result<ArcflowProfile> ParseArcflowText(std::string_view text);

// ---------------------------------------------------------------- transforms

// Folds every thread into one "all_threads" consumer.
ArcflowProfile MergeThreads(const ArcflowProfile& model);
// Keeps the subtrees under the outermost nodes whose consumer matches
// `pattern` (exact name, or a regex matching the whole name), re-rooted
// under their thread. Error when the pattern matches no frame.
Result<ArcflowProfile> RestrictToRoot(const ArcflowProfile& model, const std::string& pattern);
// Removes every node whose cum is below `min_pct` of the total; what a node
// loses is kept in one "[pruned]" child so that cum and the xarc invariants
// still add up.
ArcflowProfile Prune(const ArcflowProfile& model, double min_pct);

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
std::vector<XarcStanza> ComputeXarc(const ArcflowProfile& model);

enum class ArcflowSort { kBase, kCum };
// One line per consumer except the root.
std::vector<ArcflowLine> ComputeXprof(const ArcflowProfile& model, ArcflowSort sort);

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
Result<void> RenderArcflowProfile(const ArcflowProfile& model, const ArcflowOptions& options,
                                std::ostream& out);

}  // namespace arcprof::reports
