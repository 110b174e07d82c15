// Flame graphs: the layout (FlameTree) of the one fold by name (model::FoldByName)
// of a capture or of folded stacks, and a self-contained interactive SVG writer
// following flamegraph.pl's conventions (docs/formats.md §6,
// docs/exports.md): hover details, click to zoom, reset zoom, regex search
// with the matched share, minimum-width pruning, icicle layout, colours by
// frame kind, and a differential mode for `arcprof diff`.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/fold_by_name.h"
#include "model/metric.h"
#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

// What a box's colour says. kProcess is the first level below "all" (the
// process name, as in folded stacks; the host and --group-by levels above it);
// kRoot is "all". The order is model::NameKind's, the order boxes of one name
// are sorted by.
enum class FlameKind : uint8_t {
  kRoot,
  kProcess,
  kKernel,
  kNative,
  kJit,
  kInterpreted,
  kInlined,
  kUnknown,
};

std::string_view FlameKindName(FlameKind kind);

// A tree of boxes: the layout of a fold by name (model/fold_by_name.h), whose
// names are boxes' labels, a name of a kind, so that frames with the same
// display name and kind under one parent are one box. Node 0 is "all"; a
// box's self value is value type 0 of its call-tree node. The tree is
// read-only: what it adds to the fold is the layout (each box's value and
// its children sorted by name).
class FlameTree {
 public:
  static constexpr uint32_t kRoot = 0;
  static constexpr uint32_t kNone = 0xffffffffu;
  // One box as the writers read it.
  struct Node {
    uint32_t parent = 0;
    uint32_t name = 0;  // name id in the fold's pool: boxes with the same name and kind share it
    FlameKind kind = FlameKind::kRoot;
    uint64_t self = 0;   // value whose stack ends here
    uint64_t value = 0;  // self plus the children's values
  };

  FlameTree();  // a graph with nothing but "all"
  // Lays out `fold`: values bottom-up, every node's children sorted by name
  // (then kind). Its names of kind kGroup are the process level (kProcess).
  explicit FlameTree(model::NameFold fold);

  size_t size() const { return fold_.tree.size(); }
  Node node(uint32_t id) const;
  const std::string& name(uint32_t id) const { return fold_.names.name(name_id(id)); }
  // The children of a node, sorted by name (then kind).
  std::span<const uint32_t> children(uint32_t id) const { return children_.of(id); }
  uint64_t total() const { return value_.empty() ? 0 : value_[kRoot]; }
  // Finds the child of `parent` named `name` of `kind`; kNone when absent.
  uint32_t FindChild(uint32_t parent, std::string_view name, FlameKind kind) const;

  // Differential graphs: per node, the change of its share of the total in
  // percentage points (B minus A). Empty for an ordinary graph.
  std::vector<double> delta_points;

 private:
  uint32_t name_id(uint32_t id) const { return id == kRoot ? root_name_ : fold_.tree.nodes()[id].frame; }

  model::NameFold fold_;
  uint32_t root_name_ = 0;      // "all"
  std::vector<uint64_t> value_;  // per node
  model::ChildLists children_;   // sorted by name
};

// The selected threads of a capture folded by name (model::FoldByName): "all",
// then the process name (threads of one process merge, as in folded stacks),
// then the frames root first, named by model::FrameDisplayName (the SVG/HTML
// writers escape them) and told apart by kind; widths are `metric` (samples
// unless told); threads without any width are left out. With `group_by` (export --group-by) the
// service, container or pod is a box above the process (FoldedGroupName).
FlameTree FlameTreeFromProfile(const model::Profile& profile, const model::ThreadFilter& filter,
                               const model::Metric& metric = {}, std::string_view group_by = {});

// Folded stacks ("frame;frame;...;leaf COUNT" per line, the output of
// `arcprof export --format folded`, stackcollapse-*.pl or inferno). The colour
// suffixes _[k], _[j], _[i] give the kind; "[...]" names are unknown frames.
// Errors name the first bad line: a line without a trailing integer count, a
// count too large, a differential (two-count) line, or no stack at all.
Result<FlameTree> ParseFoldedStacks(std::string_view text);

struct FlameGraphOptions {
  std::string title = "Flame Graph";
  std::string subtitle;          // e.g. the capture's target and event; "" for none
  std::string count_name = "samples";
  bool icicle = false;           // top-down: root at the top
  int width_px = 1200;
  double min_width_px = 0.1;     // narrower boxes (and their children) are not drawn
  bool standalone = true;        // false: no XML prolog, for inline use in HTML, and the
                                 // width follows the container (data-fluid, the script)
};

// Writes the interactive SVG. Pruned boxes keep their weight: their parent is
// as wide as before, so the graph's total never changes.
void WriteFlameGraphSvg(const FlameTree& tree, const FlameGraphOptions& options, std::ostream& out);

// What WriteFlameGraphSvg draws, for tests and benchmarks: the number of boxes
// kept after minimum-width pruning and the deepest level.
struct FlameLayoutStats {
  size_t boxes = 0;
  uint32_t max_depth = 0;
};
FlameLayoutStats FlameLayout(const FlameTree& tree, const FlameGraphOptions& options);

}  // namespace arcprof::reports
