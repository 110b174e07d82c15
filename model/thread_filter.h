// Selection of threads shared by every report: --pid, --tid and --comm lists.
// A thread is selected when it passes every list that is not empty.
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

  bool empty() const { return pids.empty() && tids.empty() && comms.empty(); }
  bool Matches(const ThreadRecord& thread) const;
};

// The name a report shows for the process of `thread`: its process comm, else
// the thread's own comm, else "[unknown]".
std::string ProcessName(const ThreadRecord& thread);

}  // namespace arcprof::model
