// FlameGraph "folded" (collapsed) stacks: one line per unique stack,
// `comm;root;...;leaf COUNT`, as flamegraph.pl and speedscope read them
// (see docs/usage-report.md for the naming rules).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>

#include "model/metric.h"
#include "model/profile.h"
#include "model/thread_filter.h"

namespace arcprof::reports {

// The frame as a folded-stack element: model::FrameDisplayName with ';' -> ':'
// and control characters -> '?', then the FlameGraph color suffix: "_[i]" inlined, "_[k]" kernel, "_[j]" JIT or interpreted.
// With `lines`, a runtime's frame (python, js) also says its file and line,
// as py-spy does: "alpha (/srv/app.py:12)"; one function's lines are then
// stacks of their own.
std::string FoldedFrameName(const model::FrameTable& frames, uint32_t id, bool lines = false);
// The first element of every line: the process name, spaces -> '_'.
std::string FoldedProcessName(const model::ThreadRecord& thread);
// In a merge of several hosts (ThreadRecord::host) the host comes first, as
// the same kind of element: "web1;java;main;...".
std::string FoldedHostName(const model::ThreadRecord& thread);
// export --group-by: the element put above the process (after the host) so
// that a flame graph is rooted at services, containers or pods: the service
// name, the container id's short form ("[no container]") or the pod uid
// ("[no pod]"), sanitized as a process name; "" for group_by "" (none).
std::string FoldedGroupName(const model::ThreadRecord& thread, std::string_view group_by);
// Stacks deeper than this many frames below the process are cut: the frames
// past it fold into one "[deeper frames cut]" element. Keeps the output (whose
// size grows with depth times stacks) bounded for hostile captures.
inline constexpr uint32_t kMaxFoldedDepth = 1024;

// Unique stacks of the selected threads (threads of one process with the same
// stack merge) and their counts in `metric` (samples unless told); processes
// in name order, stacks of a process depth first with callees in name order.
std::map<std::string, uint64_t> FoldStacks(const model::Profile& profile, const model::ThreadFilter& filter,
                                           const model::Metric& metric = {}, std::string_view group_by = {},
                                           bool lines = false);
void WriteFolded(const model::Profile& profile, const model::ThreadFilter& filter, std::ostream& out,
                 const model::Metric& metric = {}, std::string_view group_by = {}, bool lines = false);

}  // namespace arcprof::reports
