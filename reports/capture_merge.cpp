#include "reports/capture_merge.h"

#include <algorithm>
#include <limits>

#include "reports/capture_store.h"

namespace arcprof {

Result<MergeResult> MergeCaptures(const std::vector<std::string>& paths, bool merge_hosts) {
  if (paths.empty()) return MakeError("merge: no input captures");
  MergeResult result;
  Profile& out = result.profile;
  std::vector<std::string> hosts;
  bool dropped_ptt = false;
  uint64_t first_start_unix = std::numeric_limits<uint64_t>::max();
  for (size_t i = 0; i < paths.size(); ++i) {
    auto read = ReadCapture(paths[i]);
    if (!read) return read.error();
    const Profile& in = *read;
    if (i == 0) {
      out.meta = in.meta;
    } else if (in.meta.event != out.meta.event || in.meta.frequency_hz != out.meta.frequency_hz ||
               in.meta.unit != out.meta.unit) {
      return MakeError(paths[i] + ": sampled " + in.meta.event + " at " + std::to_string(in.meta.frequency_hz) +
                           " Hz, " + paths[0] + " " + out.meta.event + " at " +
                           std::to_string(out.meta.frequency_hz) +
                           " Hz: merge needs captures of one event and frequency",
                       kCaptureErrorExitCode);
    }
    if (in.meta.start_unix_ns < first_start_unix) first_start_unix = in.meta.start_unix_ns;
    dropped_ptt = dropped_ptt || in.ptt.recorded;

    std::vector<uint32_t> frame_map(in.frames.size());
    for (size_t f = 0; f < in.frames.size(); ++f) frame_map[f] = out.frames.Intern(in.frames.at(static_cast<uint32_t>(f)));
    for (const auto& [module, build_id] : in.build_ids) out.build_ids.emplace(module, build_id);
    for (const auto& [name, value] : in.counters) out.counters[name] += value;

    std::vector<uint32_t> node_map;
    for (size_t t = 0; t < in.threads.size() && t < in.trees.size(); ++t) {
      const ThreadRecord& thread = in.threads[t];
      std::string host;
      if (!merge_hosts) {
        host = !thread.host.empty() ? thread.host : in.meta.host.empty() ? "[unknown host]" : in.meta.host;
        if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
      }
      const uint32_t index = out.ThreadIndex(host, thread.pid, thread.tid);
      ThreadRecord& dest = out.threads[index];
      if (dest.comm.empty()) dest.comm = thread.comm;
      if (dest.process_comm.empty()) dest.process_comm = thread.process_comm;
      if (dest.cmdline.empty()) dest.cmdline = thread.cmdline;
      CallTree& tree = out.trees[index];
      const auto& nodes = in.trees[t].nodes();
      node_map.assign(nodes.size(), 0);
      for (size_t n = 0; n < nodes.size(); ++n) {
        // ReadCapture returns parents before children and valid frame ids.
        const uint32_t target = n == 0 ? 0 : tree.Child(node_map[nodes[n].parent], frame_map[nodes[n].frame]);
        node_map[n] = target;
        CallTree::Node& node = tree.mutable_nodes()[target];
        node.n += nodes[n].n;
        node.base += nodes[n].base;
      }
    }
  }
  if (merge_hosts) {
    // One machine as far as every view is concerned.
    out.meta.host = "merged (" + std::to_string(paths.size()) + " captures)";
  } else {
    out.meta.host.clear();
    for (const std::string& host : hosts) out.meta.host += (out.meta.host.empty() ? "" : ",") + host;
  }
  out.meta.start_unix_ns = first_start_unix;
  out.meta.target = "merge of " + std::to_string(paths.size()) + " captures";
  if (dropped_ptt) {
    result.notes.push_back("per-thread time (PTT) is not carried into a merge; report --view ptt needs a single capture");
  }
  return result;
}

}  // namespace arcprof
