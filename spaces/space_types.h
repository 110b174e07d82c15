// The plain types of address spaces: a mapping event, what is known of a
// process, a mapped file and an address space's files. No behaviour.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "spaces/cgroup_parse.h"

namespace arcprof {

struct MappingEvent {
  uint64_t start = 0;
  uint64_t len = 0;
  uint64_t pgoff = 0;
  uint32_t prot = 0;       // PROT_* bits
  uint32_t flags = 0;      // MAP_* bits
  uint32_t maj = 0, min = 0;
  uint64_t ino = 0;
  std::string build_id;    // lowercase hex, "" when unknown
  std::string path;        // as the kernel reports it ("//anon", "[vdso]", "/usr/lib/...")
};

struct ProcessInfo {
  uint32_t pid = 0;
  std::string comm;
  std::string cmdline;
  uint32_t uid = 0;
  uint32_t ns_pid = 0;  // pid in its innermost pid namespace (perf maps in containers); 0 unknown
  // Its container, pod and systemd unit from /proc/PID/cgroup, and
  // OTEL_SERVICE_NAME from its environment when no unit names it (read at
  // exec and snapshot, a fork's copied; kept after exit like the rest).
  procfs::CgroupIdentity cgroup;
  std::string otel_service_name;
  // When the process started: CLOCK_BOOTTIME ns at the 10 ms of
  // /proc/PID/stat's starttime (field 22), read there at a snapshot or taken
  // from the fork event's time; 0 unknown. With the pid, it names the process
  // across windows and recordings (model::ThreadRecord::process_start_ns).
  uint64_t start_ns = 0;
};

// A mapped file as the address spaces hold it open, for a DWARF unwinder
// and for naming.
struct MappedFile {
  int fd = -1;                 // owned by AddressSpaces; open while FileOpen(file_id)
  std::string_view path;       // as the kernel named it
  std::string_view build_id;   // lowercase hex, "" when none
  uint64_t start = 0, end = 0, pgoff = 0;
  uint64_t load_bias = 0;      // runtime address - ELF vaddr for this mapping
  uint32_t file_id = 0;        // stable identity of the open file (shared across processes)
};

// Every open file mapped in a process's address space live at one time, with
// a key that identifies this state of the address space (it changes at exec
// and with every new mapping): the unwinder keeps one Dwfl per key.
struct AddressSpaceFiles {
  uint64_t key = 0;
  uint64_t generation = 0;  // index of the live generation (changes at exec)
  std::vector<MappedFile> files;
};

}  // namespace arcprof
