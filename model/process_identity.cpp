#include "model/process_identity.h"

#include <algorithm>

#include "common/text.h"

namespace arcprof::model {
namespace {

constexpr size_t kServiceNameMax = 256;

bool IsHex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
}

std::string Bounded(std::string_view text) {
  return EscapeControl(text.substr(0, std::min(text.size(), kServiceNameMax)));
}

}  // namespace

std::string ShortContainerId(std::string_view id) {
  if (id.size() > 12 && IsHex(id)) return std::string(id.substr(0, 12));
  return std::string(id);
}

std::string ServiceName(std::string_view unit, std::string_view otel_service_name, std::string_view container_id,
                        std::string_view executable) {
  if (unit.size() > 8 && unit.ends_with(".service")) return Bounded(unit.substr(0, unit.size() - 8));
  if (!otel_service_name.empty()) return Bounded(otel_service_name);
  if (!container_id.empty()) return Bounded(ShortContainerId(container_id));
  return Bounded(executable);
}

bool ContainerIdMatches(const ProcessIdentity& identity, std::string_view id) {
  return !id.empty() && identity.container_id.starts_with(id);
}

bool CgroupContains(std::string_view path, std::string_view cgroup) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (path.empty() || path == "/") return !cgroup.empty();
  if (!cgroup.starts_with(path)) return false;
  return cgroup.size() == path.size() || cgroup[path.size()] == '/';
}

}  // namespace arcprof::model
