#include "loader/cgroup_targets.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "common/scoped_fd.h"
#include "spaces/cgroup_parse.h"

namespace arcprof {
namespace {

constexpr uint32_t kMaxDepth = 32;
constexpr size_t kMaxDirectories = 100000;

std::string Normalized(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  return std::string(path);
}

bool Selected(const CgroupSelection& selection, const std::string& path, std::string_view leaf) {
  for (const std::string& cgroup : selection.cgroups) {
    if (Normalized(cgroup) == path) return true;
  }
  for (const std::string& service : selection.services) {
    if (leaf.size() == service.size() + 8 && leaf.starts_with(service) && leaf.ends_with(".service")) return true;
  }
  if (!selection.containers.empty()) {
    // Only a directory whose own name names the container (not the
    // directories below it: those are covered by their ancestor).
    const procfs::CgroupIdentity here = procfs::ParseCgroupPath(path);
    if (here.container_id.empty()) return false;
    const std::string parent = path.substr(0, path.size() - leaf.size());
    if (procfs::ParseCgroupPath(parent).container_id == here.container_id) return false;
    for (const std::string& prefix : selection.containers) {
      if (!prefix.empty() && here.container_id.starts_with(prefix)) return true;
    }
  }
  return false;
}

struct Walk {
  const CgroupSelection& selection;
  std::vector<SelectedCgroup>& out;
  size_t scanned = 0;

  // `dir` is open on the cgroup `path` at `level`.
  void Visit(int dir, const std::string& path, uint32_t level) {
    if (level >= kMaxDepth) return;
    DIR* listing = fdopendir(dup(dir));
    if (listing == nullptr) return;
    while (dirent* entry = readdir(listing)) {
      if (scanned >= kMaxDirectories) break;
      if (entry->d_type != DT_DIR) continue;
      const std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      ++scanned;
      ScopedFd child(openat(dir, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!child.valid()) continue;  // gone since the listing
      const std::string child_path = (path == "/" ? "" : path) + "/" + std::string(name);
      if (Selected(selection, child_path, name)) {
        struct stat st;
        if (fstat(child.get(), &st) == 0) out.push_back({static_cast<uint64_t>(st.st_ino), level + 1, child_path});
        continue;  // its subtree is covered
      }
      Visit(child.get(), child_path, level + 1);
    }
    closedir(listing);
  }
};

}  // namespace

std::string CgroupSelection::Describe() const {
  std::string text;
  auto add = [&](const char* flag, const std::vector<std::string>& values) {
    for (const std::string& v : values) text += (text.empty() ? "" : " ") + std::string(flag) + " " + v;
  };
  add("--container", containers);
  add("--cgroup", cgroups);
  add("--service", services);
  return text;
}

std::string Cgroup2MountPoint(const std::string& mountinfo) {
  // "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER"
  size_t start = 0;
  while (start < mountinfo.size()) {
    size_t end = mountinfo.find('\n', start);
    if (end == std::string::npos) end = mountinfo.size();
    const std::string_view line(mountinfo.data() + start, end - start);
    start = end + 1;
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos || !line.substr(dash + 3).starts_with("cgroup2 ")) continue;
    std::string_view rest = line;
    for (int field = 0; field < 4; ++field) {
      const size_t space = rest.find(' ');
      if (space == std::string_view::npos) break;
      rest.remove_prefix(space + 1);
    }
    const std::string_view mount = rest.substr(0, rest.find(' '));
    if (!mount.empty() && mount.front() == '/' && mount.find('\\') == std::string_view::npos) {
      return std::string(mount);
    }
  }
  return {};
}

Result<void> CheckCgroupSelection(const CgroupSelection& selection) {
  for (const std::string& prefix : selection.containers) {
    if (prefix.empty()) return MakeError("--container: give a container id or a prefix of one");
  }
  for (const std::string& service : selection.services) {
    if (service.empty() || service.find('/') != std::string::npos) {
      return MakeError("--service: give a systemd service name such as nginx (no '/')");
    }
  }
  for (const std::string& path : selection.cgroups) {
    if (path.empty() || path.front() != '/') {
      return MakeError("--cgroup '" + path + "': give a cgroup v2 path from the root, e.g. /system.slice/nginx.service");
    }
    if (Normalized(path) == "/" ) {
      return MakeError("--cgroup /: the root cgroup is the whole machine; record without --cgroup");
    }
    if (path.find("/../") != std::string::npos || path.ends_with("/..")) {
      return MakeError("--cgroup '" + path + "': a path without '..'");
    }
  }
  return {};
}

std::vector<SelectedCgroup> FindSelectedCgroups(const std::string& root, const CgroupSelection& selection,
                                                size_t* scanned) {
  std::vector<SelectedCgroup> out;
  ScopedFd dir(open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return out;
  Walk walk{selection, out};
  walk.Visit(dir.get(), "/", 0);
  if (scanned != nullptr) *scanned = walk.scanned;
  return out;
}

}  // namespace arcprof
