// Selection of threads shared by every report: --pid, --tid, --comm,
// --container, --service and --cgroup lists. A thread is selected when it
// passes every list that is not empty (within a list, any entry).
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

  bool empty() const {
    return pids.empty() && tids.empty() && comms.empty() && containers.empty() && services.empty() &&
           cgroups.empty();
  }
  bool Matches(const ThreadRecord& thread) const;
};

// The name a report shows for the process of `thread`: its process comm, else
// the thread's own comm, else "[unknown]".
std::string ProcessName(const ThreadRecord& thread);

}  // namespace arcprof::model
