// Selection of threads shared by every report: --pid, --tid, --comm,
// --container, --service and --cgroup lists, and processes by pid and start
// (push's series). A thread is selected when it passes every list that is not
// empty (within a list, any entry).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/profile.h"

namespace arcprof::model {

struct ThreadFilter {
  std::vector<uint32_t> pids;
  std::vector<uint32_t> tids;
  std::vector<std::string> comms;  // matches the process name or the thread name exactly
  std::vector<std::string> containers;  // a prefix of the container id (model/process_identity.h)
  std::vector<std::string> services;    // the service name exactly
  std::vector<std::string> cgroups;     // the process's cgroup or an ancestor of it
  // Processes by (pid, ThreadRecord::process_start_ns): a pid that another
  // process held in the same window is not selected with this one.
  // Contract: sorted (by pid, then start) without duplicates, as Matches
  // finds a thread's process by binary search (a push series of a churning
  // machine's window holds 12,000 processes and every thread of the window is
  // looked up in it). Its producer (push/push_request.cpp, SplitWindow) sorts it.
  struct Process {
    uint32_t pid = 0;
    uint64_t start_ns = 0;
    auto operator<=>(const Process&) const = default;
  };
  std::vector<Process> processes;

  bool empty() const {
    return pids.empty() && tids.empty() && comms.empty() && containers.empty() && services.empty() &&
           cgroups.empty() && processes.empty();
  }
  bool Matches(const ThreadRecord& thread) const;
};

// The name a report shows for the process of `thread`: its process comm, else
// the thread's own comm, else "[unknown]".
std::string ProcessName(const ThreadRecord& thread);

}  // namespace arcprof::model
