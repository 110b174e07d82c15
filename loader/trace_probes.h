// `arcprof trace`: the BPF side (bpf/trace.bpf.c) loaded, its uprobe_multi
// links, and the exact call tree it built. Links are file descriptors of
// this process: any exit, SIGKILL included, removes every probe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bpf/trace.h"
#include "common/result.h"
#include "common/scoped_fd.h"

struct trace;

namespace arcprof {

struct TraceProbe {
  uint64_t file_offset = 0;
  uint32_t cookie = 0;  // function id, ARCPROF_TRACE_ROOT_BIT for a root
};

class TraceProbes {
 public:
  static Result<std::unique_ptr<TraceProbes>> Load();
  ~TraceProbes();

  void AddProcess(uint32_t tgid);
  void RemoveProcess(uint32_t tgid);
  // Attaches entry probes and exit probes (rets, tail jumps) in the file at
  // `path`, for the threads of `pid` (0: any process; the tgid map filters).
  // Returns the link ids, for Detach.
  Result<std::vector<size_t>> Attach(const std::string& path, uint32_t pid,
                                     const std::vector<TraceProbe>& entries,
                                     const std::vector<TraceProbe>& exits);
  void Detach(const std::vector<size_t>& links);
  void DetachAll();

  std::vector<trace_node> Nodes() const;
  trace_counters Counters() const;
  size_t links() const;

 private:
  TraceProbes() = default;
  Result<ScopedFd> Link(int prog_fd, const std::string& path, uint32_t pid,
                        const std::vector<TraceProbe>& probes);
  ::trace* skel_ = nullptr;
  std::vector<ScopedFd> links_;
};

}  // namespace arcprof
