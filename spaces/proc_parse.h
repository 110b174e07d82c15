// Pure parsers of /proc text (maps, comm, cmdline, status). They take the
// text, never touch the file system, and reject malformed input with an error
// value, so they can be unit-tested and fuzzed on their own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace arcprof::procfs {

// PROT_* bits, as in <sys/mman.h>, so callers can compare with perf's prot.
inline constexpr uint32_t kProtRead = 0x1;
inline constexpr uint32_t kProtWrite = 0x2;
inline constexpr uint32_t kProtExec = 0x4;

struct MapsEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t pgoff = 0;
  uint32_t prot = 0;  // kProt* bits
  bool shared = false;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  std::string path;  // "" for anonymous memory; " (deleted)" removed
  bool deleted = false;
};

// One line of /proc/PID/maps ("start-end perms offset maj:min inode   path").
// The path is the rest of the line and may contain spaces.
Result<MapsEntry> ParseMapsLine(std::string_view line);

// Every well-formed line of a maps file; malformed lines are skipped and
// counted in *malformed when given.
std::vector<MapsEntry> ParseMaps(std::string_view text, size_t* malformed = nullptr);

// /proc/PID/comm: the name without its trailing newline.
std::string ParseComm(std::string_view text);

// /proc/PID/cmdline: NUL-separated arguments joined with spaces; trailing NULs
// dropped. Empty for kernel threads and zombies.
std::string ParseCmdline(std::string_view raw);

struct ProcStatus {
  std::string name;
  uint32_t tgid = 0;
  uint32_t uid = 0;   // real uid
  uint32_t euid = 0;  // effective uid
  std::vector<uint32_t> nspid;  // outermost first; the last is the pid in the innermost namespace
  bool has_uid = false;
};

// /proc/PID/status ("Key:\tvalue" lines). Fails when no Uid line is present.
Result<ProcStatus> ParseStatus(std::string_view text);

// /proc/PID/stat: its field 22, starttime, the clock ticks (sysconf
// _SC_CLK_TCK) from boot to the process's start (CLOCK_BOOTTIME). The name
// in field 2 may hold spaces and parentheses: the fields after it are read
// from its last ')'.
Result<uint64_t> ParseStatStartTicks(std::string_view text);

// Removes a trailing " (deleted)" (as printed by the kernel's d_path for an
// unlinked file) and reports whether it was there.
std::string_view StripDeletedSuffix(std::string_view path, bool* deleted);

}  // namespace arcprof::procfs
