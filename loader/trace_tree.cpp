#include "loader/trace_tree.h"

#include <algorithm>

#include "loader/record_extension.h"
#include "symbolize/symbolizer.h"

namespace arcprof {
namespace {

void NameThread(RecordContext& context, const model::Profile& window, model::ThreadRecord& thread) {
  for (const model::ThreadRecord& other : window.threads) {
    if (other.pid == thread.pid && &other != &thread && !other.process_comm.empty()) {
      thread.process_comm = other.process_comm;
      thread.cmdline = other.cmdline;
      thread.identity = other.identity;
      break;
    }
  }
  thread.comm = std::string(context.symbolizer.spaces().ThreadName(thread.pid, thread.tid));
  if (thread.comm.empty()) thread.comm = thread.process_comm;
}

}  // namespace

std::vector<uint32_t> SampledPathAbove(const model::ThreadRecord& thread, const std::vector<uint8_t>& is_root) {
  const auto& nodes = thread.tree.nodes();
  const std::vector<uint64_t> cum = thread.tree.Cumulative();
  uint32_t best = 0;
  std::vector<uint8_t> inside(nodes.size(), 0);
  for (uint32_t v = 1; v < nodes.size(); ++v) {
    const uint32_t frame = nodes[v].frame;
    const bool root = frame < is_root.size() && is_root[frame];
    inside[v] = inside[nodes[v].parent] || root;
    if (root && !inside[nodes[v].parent] && (best == 0 || cum[v] > cum[best])) best = v;
  }
  std::vector<uint32_t> path;
  if (best == 0) return path;
  for (uint32_t v = nodes[best].parent; v != 0; v = nodes[v].parent) path.push_back(nodes[v].frame);
  std::reverse(path.begin(), path.end());
  return path;
}

TraceThread TraceThreadOf(RecordContext& context, model::Profile& window, uint32_t pid, uint32_t tid,
                          const std::vector<uint8_t>& is_root) {
  TraceThread out;
  out.index = window.ThreadIndex(pid, tid);
  model::ThreadRecord& thread = window.threads[out.index];
  if (thread.comm.empty()) NameThread(context, window, thread);
  out.context = SampledPathAbove(window.threads[out.index], is_root);
  if (out.context.empty()) {
    for (const model::ThreadRecord& other : window.threads) {
      if (other.pid != pid) continue;
      out.context = SampledPathAbove(other, is_root);
      if (!out.context.empty()) break;
    }
  }
  return out;
}

uint64_t AddTraceValues(model::CallTree& tree, uint32_t node, size_t calls_type, size_t wall_type, uint64_t calls,
                        uint64_t self_ns, uint64_t unreturned, double take, TraceTotals* totals) {
  const uint64_t take_ns = std::min<uint64_t>(self_ns, static_cast<uint64_t>(std::max(0.0, take)));
  tree.Add(node, 0, calls_type, calls);
  tree.Add(node, 0, wall_type, self_ns - take_ns);
  totals->measured += self_ns;
  totals->removed += take_ns;
  totals->calls += calls;
  totals->unreturned += unreturned;
  totals->estimated += std::max(0.0, take);
  return take_ns;
}

}  // namespace arcprof
