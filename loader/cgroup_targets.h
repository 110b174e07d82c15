// Profile only what you choose: the cgroups that record/continuous
// --container, --cgroup and --service name, found in the cgroup v2 hierarchy
// and handed to the BPF filter by id (bpf/sample.bpf.c, target_cgroups). The
// hierarchy is walked at the start and again every second while recording,
// so a container or service that starts later is profiled from then on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace arcprof {

struct CgroupSelection {
  std::vector<std::string> containers;  // container id prefixes (at least 1 character)
  std::vector<std::string> cgroups;     // v2 paths ("/system.slice/nginx.service"); their subtrees
  std::vector<std::string> services;    // systemd service units, without ".service"

  bool empty() const { return containers.empty() && cgroups.empty() && services.empty(); }
  // "--container 0123abcd --service nginx" for messages and the capture's target.
  std::string Describe() const;
};

// A cgroup the selection names: its v2 id (the inode of its directory, what
// bpf_get_current_cgroup_id returns), its depth below the root (level 1 for
// "/system.slice") and its path.
struct SelectedCgroup {
  uint64_t id = 0;
  uint32_t level = 0;
  std::string path;
};

// The mount point of the cgroup v2 hierarchy (/sys/fs/cgroup, or
// /sys/fs/cgroup/unified on a hybrid machine) from a mountinfo text; "" when
// there is none.
std::string Cgroup2MountPoint(const std::string& mountinfo);

// Checks the selection (no empty prefix, paths absolute and not the root).
Result<void> CheckCgroupSelection(const CgroupSelection& selection);

// Walks the hierarchy under `root` (bounded: 32 levels, 100,000 directories;
// symlinks are never followed) and returns the outermost cgroups the
// selection names: a container's cgroup (symbolize/cgroup_parse.h), a
// service's `NAME.service`, a --cgroup path. *scanned counts directories.
std::vector<SelectedCgroup> FindSelectedCgroups(const std::string& root, const CgroupSelection& selection,
                                                size_t* scanned = nullptr);

}  // namespace arcprof
