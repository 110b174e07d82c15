// Who a process is on a fleet: its container, pod and service, its cgroup and
// its pid in its own pid namespace. The loader reads them once per process
// (spaces/cgroup_parse.h parses /proc/PID/cgroup and the environment);
// every view, filter and export names a process by them (docs/usage.md,
// "Containers, pods and services"), and the capture keeps them with each
// thread (docs/capture-format.md, schema 6). The texts come from other users
// (a delegated cgroup subtree can be named anything): they arrive bounded and
// escaped, and are trusted for nothing but labels.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace arcprof::model {

struct ProcessIdentity {
  // container.id: the full id of a docker, containerd (CRI), cri-o or podman
  // container (hex), the name of an LXC or systemd-nspawn container; "" when
  // the process runs in no container arcprof recognizes.
  std::string container_id;
  // Which runtime named it: docker, containerd, cri-o, podman, lxc,
  // systemd-nspawn, or kubernetes (a bare id under a kubepods path).
  std::string container_runtime;
  // k8s.pod.uid, dashed (kubepods paths of the systemd driver write `_`).
  std::string pod_uid;
  // The pod's QoS class: guaranteed, burstable, besteffort; "" outside a pod.
  std::string qos_class;
  // service.name (ServiceName below; a --label service.name=... overrides it).
  std::string service_name;
  // The cgroup: the v2 path ("/system.slice/nginx.service"), else the v1
  // name=systemd path, else the first v1 path; "" when unknown.
  std::string cgroup;
  // The pid as the process sees it in its own (innermost) pid namespace; 0
  // when unknown. Equal to the host pid outside a pid namespace.
  uint32_t ns_pid = 0;

  bool operator==(const ProcessIdentity&) const = default;
  bool empty() const {
    return container_id.empty() && container_runtime.empty() && pod_uid.empty() && qos_class.empty() &&
           service_name.empty() && cgroup.empty() && ns_pid == 0;
  }
};

// The short form of a container id: its first 12 characters for a hex id
// (as `docker ps` shows it), a name as it is.
std::string ShortContainerId(std::string_view id);

// service.name: the systemd service unit without `.service` (`nginx.service`
// -> `nginx`, `getty@tty1.service` -> `getty@tty1`), else OTEL_SERVICE_NAME,
// else the container id's short form, else the executable name. The inputs
// are escaped already; the result is cut to 256 bytes.
std::string ServiceName(std::string_view unit, std::string_view otel_service_name,
                        std::string_view container_id, std::string_view executable);

// True when `id` (at least one character) is a prefix of the container id.
bool ContainerIdMatches(const ProcessIdentity& identity, std::string_view id);
// True when the cgroup `path` is the process's cgroup or an ancestor of it
// ("/a" holds "/a" and "/a/b", not "/ab"); trailing '/' ignored; "/" holds
// every process with a known cgroup.
bool CgroupContains(std::string_view path, std::string_view cgroup);

}  // namespace arcprof::model
