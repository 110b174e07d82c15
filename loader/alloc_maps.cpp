// What --alloc reads of a process's /proc/PID/maps (loader/alloc_source.h):
// no BPF, so the fuzz target builds it alone.
#include <algorithm>
#include <string>
#include <string_view>

#include "loader/alloc_source.h"

namespace arcprof {

std::string OwnAllocator(std::string_view maps) {
  for (std::string_view name : {"libjemalloc", "libtcmalloc", "libmimalloc", "libhoard", "libtbbmalloc"}) {
    const size_t at = maps.find(name);
    if (at == std::string_view::npos) continue;
    size_t end = maps.find_first_of(" \n", at);
    if (end == std::string_view::npos) end = maps.size();
    return std::string(maps.substr(at, std::min<size_t>(end - at, 64)));
  }
  return "";
}

std::optional<procfs::MapsEntry> LibcMappingOf(std::string_view maps) {
  for (procfs::MapsEntry& m : procfs::ParseMaps(maps)) {
    if (m.path.ends_with("/libc.so.6") && m.inode != 0) return std::move(m);
  }
  return std::nullopt;
}

}  // namespace arcprof
