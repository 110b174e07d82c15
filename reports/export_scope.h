// Applies the selection options of `arcprof export` (--pid/--tid/--comm,
// --root, --min) to a profile, so that every format honours them the same way.
#pragma once

#include <string>

#include "common/result.h"
#include "reports/export_options.h"
#include "model/profile.h"

namespace arcprof::reports {

// --root matches a frame's display name (model::FrameDisplayName), the name
// every view shows.

// A copy of `profile` with only the selected threads, each tree restricted to
// the subtrees under the outermost frames matching options.root (re-rooted
// under the thread) and, with options.min_percent, every node whose cumulative
// samples are below that share of the selected total replaced by one
// "[pruned]" child of its parent holding them, so totals do not change.
// Errors: a --root that matches no frame, a --min outside [0, 100].
Result<model::Profile> ScopeProfile(const model::Profile& profile, const ExportOptions& options);

// True when ScopeProfile would return the profile unchanged apart from the
// thread filter (no --root, no --min).
inline bool ScopeIsOnlyFilter(const ExportOptions& options) {
  return options.root.empty() && options.min_percent <= 0;
}

// The symbol of the frame ScopeProfile adds for pruned subtrees.
inline constexpr const char* kPrunedFrameName = "[pruned]";

}  // namespace arcprof::reports
