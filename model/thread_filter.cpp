#include "model/thread_filter.h"

#include <algorithm>

namespace arcprof::model {

bool ThreadFilter::Matches(const ThreadRecord& thread) const {
  auto contains = [](const auto& list, const auto& value) {
    return std::find(list.begin(), list.end(), value) != list.end();
  };
  if (!pids.empty() && !contains(pids, thread.pid)) return false;
  if (!tids.empty() && !contains(tids, thread.tid)) return false;
  if (!comms.empty() && !contains(comms, thread.process_comm) && !contains(comms, thread.comm)) {
    return false;
  }
  const ProcessIdentity& id = thread.identity;
  if (!containers.empty() && std::none_of(containers.begin(), containers.end(), [&](const std::string& c) {
        return ContainerIdMatches(id, c);
      })) {
    return false;
  }
  if (!services.empty() && !contains(services, id.service_name)) return false;
  if (!cgroups.empty() && std::none_of(cgroups.begin(), cgroups.end(), [&](const std::string& path) {
        return CgroupContains(path, id.cgroup);
      })) {
    return false;
  }
  return true;
}

std::string ProcessName(const ThreadRecord& thread) {
  if (!thread.process_comm.empty()) return thread.process_comm;
  if (!thread.comm.empty()) return thread.comm;
  return "[unknown]";
}

}  // namespace arcprof::model
