// The one fold by name: the selected threads of a profile merged into one
// call tree whose frames are display names (model::FrameDisplayName), so that
// frames sharing a name under one parent are one node. The flame graph (SVG,
// HTML, the differential graph), folded stacks and the arcflow reports
// (xtree, xarc, xprof) read it; each view only names the levels above the
// frames and, where its syntax needs it, rewrites the names (folded text:
// reports/folded.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/metric.h"
#include "model/name_pool.h"
#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::model {

// A profile folded by name: node 0 is the root (frame CallTree::kNoFrame),
// every other node's frame is a name id of `names`. A node's n is the
// occurrences and its value 0 the metric's value of the thread nodes folded
// into it; a thread's own node 0 goes to its innermost level (the root when
// it has none).
struct NameFold {
  NamePool names;
  CallTree tree;
};

struct FoldOptions {
  // The names above a thread's frames, outermost first, each of kind
  // NameKind::kGroup: threads with the same names share those nodes and
  // everything below them ("web1", "java"; arcflow's "1_2_main"). None: the
  // frames hang from the root.
  std::function<void(const ThreadRecord& thread, std::vector<std::string>& levels)> levels;
  // Frames keyed by display name and NameKindOf (a kernel and a native
  // function of one name are two nodes); false: by display name alone, kind
  // NameKind::kFunction.
  bool kinds = true;
  // A runtime's frames (python, js) named with their line
  // (FrameDisplayNameWithLine): one function's lines are nodes of their own.
  bool lines = false;
  // A selected thread whose metric values are all 0 still adds its levels'
  // nodes (arcflow lists every thread); false: it adds nothing.
  bool empty_threads = false;
};

// Each frame's name is computed once (FrameDisplayName, or
// FrameDisplayNameWithLine with `lines`). A frame id outside
// the frame table (a capture the reader would refuse) is "[bad frame id]".
NameFold FoldByName(const Profile& profile, const ThreadFilter& filter, const Metric& metric,
                    const FoldOptions& options = {});

}  // namespace arcprof::model
