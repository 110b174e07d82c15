#include "spaces/cgroup_parse.h"

#include <algorithm>
#include <vector>

#include "common/text.h"

namespace arcprof::procfs {
namespace {

// Cut to `max` bytes, then escaped for a terminal.
std::string Bounded(std::string_view text, size_t max) {
  return EscapeControl(text.substr(0, std::min(text.size(), max)));
}

bool IsHex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
}

// A container id of an OCI runtime: hex, 12 to 128 digits (64 in practice).
bool IsContainerHex(std::string_view s) { return s.size() >= 12 && s.size() <= 128 && IsHex(s); }

bool ConsumePrefix(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

bool ConsumeSuffix(std::string_view& s, std::string_view suffix) {
  if (!s.ends_with(suffix)) return false;
  s.remove_suffix(suffix.size());
  return true;
}

// `<prefix><hex>[.scope]` -> the hex, or "".
std::string_view ScopeId(std::string_view component, std::string_view prefix) {
  if (!ConsumePrefix(component, prefix)) return {};
  ConsumeSuffix(component, ".scope");
  return IsContainerHex(component) ? component : std::string_view();
}

// A pod uid as kubepods paths write it: hex digits with `-` or `_` between
// groups (the systemd driver's `_`), 32 to 36 characters. Returned dashed and
// in lower case; "" when it is no uid.
std::string PodUid(std::string_view s) {
  if (s.size() < 32 || s.size() > 36) return {};
  std::string uid;
  for (char c : s) {
    if (c == '_' || c == '-') {
      uid += '-';
    } else if (IsHex(std::string_view(&c, 1))) {
      uid += static_cast<char>(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
    } else {
      return {};
    }
  }
  return uid;
}

// systemd's unit-name escape of '-' ("\x2d") undone, for machine names.
std::string UnescapeUnit(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.substr(i, 4) == "\\x2d") {
      out += '-';
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool IsMachineName(std::string_view s) { return !s.empty() && s.size() <= kCgroupFieldMax; }

// What a kubepods component says: `kubepods-burstable-pod<uid>.slice`,
// `kubepods-pod<uid>.slice`, `kubepods-besteffort.slice`, `burstable`, `pod<uid>`.
void KubeComponent(std::string_view c, std::string& qos, std::string& pod) {
  ConsumeSuffix(c, ".slice");
  if (ConsumePrefix(c, "kubepods")) ConsumePrefix(c, "-");
  for (std::string_view q : {"burstable", "besteffort", "guaranteed"}) {
    std::string_view rest = c;
    if (ConsumePrefix(rest, q) && (rest.empty() || rest.front() == '-')) {
      qos = std::string(q);
      c = rest;
      ConsumePrefix(c, "-");
      break;
    }
  }
  if (ConsumePrefix(c, "pod")) {
    if (std::string uid = PodUid(c); !uid.empty()) pod = std::move(uid);
  }
}

struct Container {
  std::string_view id;
  const char* runtime = "";
  bool unescape = false;  // a systemd-escaped machine name
};

// The container a component (after `previous`) names, if any.
Container ContainerOf(std::string_view c, std::string_view previous, bool in_pod) {
  if (auto id = ScopeId(c, "docker-"); !id.empty()) return {id, "docker"};
  if (auto id = ScopeId(c, "cri-containerd-"); !id.empty()) return {id, "containerd"};
  if (auto id = ScopeId(c, "crio-"); !id.empty()) return {id, "cri-o"};
  if (auto id = ScopeId(c, "libpod-"); !id.empty()) return {id, "podman"};
  if (previous == "docker" && IsContainerHex(c)) return {c, "docker"};
  if (in_pod && IsContainerHex(c)) return {c, "kubernetes"};
  std::string_view rest = c;
  if (ConsumePrefix(rest, "lxc.payload.") && IsMachineName(rest)) return {rest, "lxc"};
  if (previous == "lxc" && IsMachineName(c)) return {c, "lxc"};
  rest = c;
  if (ConsumePrefix(rest, "systemd-nspawn@") && ConsumeSuffix(rest, ".service") && IsMachineName(rest)) {
    return {rest, "systemd-nspawn", true};
  }
  rest = c;
  if (previous == "machine.slice" && ConsumePrefix(rest, "machine-") && ConsumeSuffix(rest, ".scope") &&
      IsMachineName(rest)) {
    return {rest, "systemd-nspawn", true};
  }
  return {};
}

const char* ColonRuntime(std::string_view runtime) {
  if (runtime == "cri-containerd") return "containerd";
  if (runtime == "crio") return "cri-o";
  if (runtime == "docker") return "docker";
  return nullptr;
}

}  // namespace

CgroupIdentity ParseCgroupPath(std::string_view path) {
  path = path.substr(0, std::min(path.size(), kCgroupPathMax));
  CgroupIdentity out;
  out.cgroup = EscapeControl(path);
  bool in_kubepods = false;
  std::string_view unit, previous;
  // At most kCgroupPathMax / 2 components: the walk is bounded by the path.
  for (size_t start = 0; start < path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view c = path.substr(start, end - start);
    start = end + 1;
    if (c.empty()) continue;
    // containerd/cri-o with the systemd driver on cgroup v1:
    // "kubepods-burstable-pod<uid>.slice:cri-containerd:<id>".
    if (size_t colon = c.find(':'); colon != std::string_view::npos) {
      const std::string_view slice = c.substr(0, colon), rest = c.substr(colon + 1);
      if (size_t second = rest.find(':'); second != std::string_view::npos) {
        const std::string_view id = rest.substr(second + 1);
        if (slice.starts_with("kubepods")) {
          in_kubepods = true;
          KubeComponent(slice, out.qos_class, out.pod_uid);
        }
        if (const char* runtime = ColonRuntime(rest.substr(0, second)); runtime && IsContainerHex(id)) {
          out.container_id = std::string(id);
          out.container_runtime = runtime;
          unit = {};
        }
      }
      previous = c;
      continue;
    }
    if (c.starts_with("kubepods")) in_kubepods = true;
    if (in_kubepods && (c.starts_with("kubepods") || c.starts_with("pod") || c == "burstable" ||
                        c == "besteffort" || c == "guaranteed")) {
      KubeComponent(c, out.qos_class, out.pod_uid);
    }
    if (const Container found = ContainerOf(c, previous, in_kubepods && !out.pod_uid.empty()); !found.id.empty()) {
      out.container_id = Bounded(found.unescape ? UnescapeUnit(found.id) : std::string(found.id), kCgroupFieldMax);
      out.container_runtime = found.runtime;
      unit = {};  // a unit above the container is its runtime's, not the container's
    } else if (c.size() > 8 && c.ends_with(".service")) {
      unit = c;
    }
    previous = c;
  }
  if (out.pod_uid.empty()) {
    out.qos_class.clear();  // a QoS slice without a pod is the kubelet's own
  } else if (out.qos_class.empty()) {
    out.qos_class = "guaranteed";  // guaranteed pods sit right under kubepods
  }
  out.unit = Bounded(unit, kCgroupFieldMax);
  return out;
}

CgroupIdentity ParseProcCgroup(std::string_view text) {
  text = text.substr(0, std::min(text.size(), kCgroupFileMax));
  std::string_view v2, systemd;
  std::vector<std::string_view> v1;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const size_t first = line.find(':');
    if (first == std::string_view::npos) continue;
    const size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view id = line.substr(0, first), controllers = line.substr(first + 1, second - first - 1);
    const std::string_view path = line.substr(second + 1);
    if (path.empty() || path.front() != '/') continue;
    if (id == "0" && controllers.empty()) {
      v2 = path;
    } else if (controllers == "name=systemd") {
      systemd = path;
    } else if (v1.size() < 64) {
      v1.push_back(path);
    }
  }
  auto names_something = [](const CgroupIdentity& c) {
    return !c.container_id.empty() || !c.pod_uid.empty() || !c.unit.empty();
  };
  CgroupIdentity best;
  bool found = false;
  if (!v2.empty()) {
    best = ParseCgroupPath(v2);
    found = names_something(best);
  }
  if (!found && !systemd.empty()) {
    CgroupIdentity c = ParseCgroupPath(systemd);
    if (names_something(c) || v2.empty()) best = std::move(c), found = names_something(best);
  }
  for (size_t i = 0; !found && i < v1.size(); ++i) {
    CgroupIdentity c = ParseCgroupPath(v1[i]);
    if (!c.container_id.empty() || !c.pod_uid.empty()) best = std::move(c), found = true;
  }
  const std::string_view cgroup = !v2.empty() ? v2 : !systemd.empty() ? systemd : v1.empty() ? "" : v1.front();
  best.cgroup = EscapeControl(cgroup.substr(0, std::min(cgroup.size(), kCgroupPathMax)));
  return best;
}

bool HasServiceUnit(const CgroupIdentity& cgroup) {
  return cgroup.unit.size() > 8 && cgroup.unit.ends_with(".service");
}

std::string EnvironValue(std::string_view env, std::string_view key) {
  env = env.substr(0, std::min(env.size(), kEnvironReadMax));
  while (!env.empty()) {
    const size_t end = env.find('\0');
    const std::string_view entry = env.substr(0, end);
    env = end == std::string_view::npos ? std::string_view() : env.substr(end + 1);
    if (entry.size() > key.size() && entry.starts_with(key) && entry[key.size()] == '=') {
      return Bounded(entry.substr(key.size() + 1), kCgroupFieldMax);
    }
  }
  return {};
}

}  // namespace arcprof::procfs
