// What --alloc reads of a process's /proc/PID/maps (loader/alloc_source.h):
// no BPF, so the fuzz target builds it alone.
#include <algorithm>
#include <string>
#include <string_view>

#include "loader/alloc_source.h"

namespace arcprof {

std::optional<procfs::MapsEntry> LibcMappingOf(std::string_view maps) {
  for (procfs::MapsEntry& m : procfs::ParseMaps(maps)) {
    if (m.path.ends_with("/libc.so.6") && m.inode != 0) return std::move(m);
  }
  return std::nullopt;
}

}  // namespace arcprof
