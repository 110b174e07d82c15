// Pure parsers of what says which container, pod and service a process
// belongs to: /proc/PID/cgroup (cgroup v2 and v1) and /proc/PID/environ.
// Like proc_parse.h they take text and never touch the file system. The text
// is another user's (a delegated cgroup subtree or an environment can hold
// anything): every result is bounded and escaped for a terminal
// (EscapeControl), and is trusted for nothing but a label
// (model/process_identity.h holds what the loader makes of it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace arcprof::procfs {

// Bounds (bytes before escaping; longer values are cut).
inline constexpr size_t kCgroupFieldMax = 256;
inline constexpr size_t kCgroupPathMax = 4096;
// At most this much of /proc/PID/cgroup and /proc/PID/environ is looked at.
inline constexpr size_t kCgroupFileMax = 64 * 1024;
inline constexpr size_t kEnvironReadMax = 64 * 1024;

// What a cgroup path says about its processes.
struct CgroupIdentity {
  std::string container_id;       // full hex id, or an LXC / nspawn machine name
  std::string container_runtime;  // docker, containerd, cri-o, podman, lxc, systemd-nspawn, kubernetes
  std::string pod_uid;            // dashed
  std::string qos_class;          // guaranteed, burstable, besteffort ("" outside a pod)
  std::string unit;               // the deepest systemd service unit below any container ("nginx.service")
  std::string cgroup;             // the path it was read from

  bool operator==(const CgroupIdentity&) const = default;
};

// One cgroup path ("/kubepods.slice/.../cri-containerd-<id>.scope"): the
// innermost container it names; a pod only under a `kubepods*` component.
CgroupIdentity ParseCgroupPath(std::string_view path);

// The text of /proc/PID/cgroup, lines "ID:CONTROLLERS:PATH". The v2 line
// ("0::PATH") decides when it names a container, pod or unit, then the v1
// name=systemd line, then any v1 line naming a container or pod; `cgroup` is
// the v2 path whenever there is one. Malformed lines are skipped.
CgroupIdentity ParseProcCgroup(std::string_view text);

// True when the cgroup names a service unit (no need to read the environment).
bool HasServiceUnit(const CgroupIdentity& cgroup);

// The value of `key` in a NUL-separated environment (/proc/PID/environ);
// "" when absent. The first definition wins, as for getenv.
std::string EnvironValue(std::string_view env, std::string_view key);

}  // namespace arcprof::procfs
