// What `arcprof export` passes to a format writer: the thread filter and the
// --root/--min/--icicle options shared by every format (see docs/exports.md).
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <string>

#include "common/result.h"
#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

struct ExportOptions {
  model::ThreadFilter filter;
  // Keep only the subtrees under the outermost frames with this name (or whose
  // name a POSIX extended regex matches whole); "" = the whole profile.
  std::string root;
  // Fold call-tree nodes below this percentage of the selected samples into
  // one "[pruned]" frame under their parent; 0 keeps everything.
  double min_percent = 0;
  // Flame graphs: draw top-down (root at the top).
  bool icicle = false;
  // --metric (model/metric.h): the value the export shows. pprof carries
  // every value and makes this one its default sample type.
  std::string metric = "samples";
  // --group-by: folded stacks and flame graphs put "service", "container" or
  // "pod" above the process (reports/folded.h, FoldedGroupName); "" = none.
  std::string group_by;
  // --lines: folded stacks name a runtime's frames (python, js) with their
  // file and line, "alpha (/srv/app.py:12)"; without it a function is one
  // element whatever its lines.
  bool lines = false;
};

// Renders `profile` (the whole capture: the writer applies `options`) to
// `out`. An error is one line for the user, exit code 1.
using ExportWriter =
    std::function<Result<void>(const model::Profile& profile, const ExportOptions& options, std::ostream& out)>;

// The formats are listed in the one registry, reports/registry.h.

}  // namespace arcprof::reports
