// The process registry: what the address spaces know about each process apart
// from its address space (that is the Timeline's): command name, command line,
// owner, pid in its own namespace and thread names. It reads them from /proc
// while the process lives (a snapshot, or at exec/fork events), and keeps
// them after the process exits, for samples drained later.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "common/result.h"
#include "spaces/space_types.h"

namespace arcprof {

class ProcessRegistry {
 public:
  struct Record {
    ProcessInfo info;
    bool seen = false;  // named by a snapshot or an event (not just referenced)
    bool owner_known = false;  // uid and ns_pid read from status (or a parent's)
    bool snapshot_attempted = false;  // see SnapshotAttempted
    // Names of threads by tid; the main thread's is info.comm unless a
    // snapshot read it (ThreadName falls back to info.comm).
    std::unordered_map<uint32_t, std::string> thread_names;
  };

  explicit ProcessRegistry(std::string proc_root) : proc_root_(std::move(proc_root)) {}

  // The record of pid, created empty when missing.
  Record& Get(uint32_t pid);
  const Record* Find(uint32_t pid) const;

  std::string ProcPath(uint32_t pid, std::string_view leaf) const;
  const std::string& proc_root() const { return proc_root_; }

  // Reads comm, details and thread names of a live process and returns the
  // text of its maps; nullopt when it is gone (or not a process). Either way
  // the pid counts as snapshot-attempted.
  std::optional<std::string> Snapshot(uint32_t pid);
  bool SnapshotAttempted(uint32_t pid) const;
  void MarkSnapshotAttempted(uint32_t pid);

  // `exited`: the process's exit is already known (its events were applied
  // late), so /proc has nothing to read.
  void OnExec(uint32_t pid, std::string_view comm, bool exited = false);
  void OnComm(uint32_t pid, uint32_t tid, std::string_view comm);
  // `start_ns`: the child's start (ProcessInfo::start_ns) from the event.
  void OnFork(uint32_t parent_pid, uint32_t child_pid, uint64_t start_ns);

  // The thread name last seen for tid (the process comm when none).
  std::string_view ThreadName(uint32_t pid, uint32_t tid) const;

  // Forgets pid entirely (its process exited long ago).
  void Remove(uint32_t pid);
  size_t size() const { return records_.size(); }
  // About how many heap bytes the records hold (walks them).
  size_t bytes() const;

 private:
  // Command line, identity (ReadIdentity) and, with_status, uid and
  // namespaced pid of a live process.
  void ReadDetails(uint32_t pid, Record& record, bool with_status);
  // Container, pod and unit from /proc/PID/cgroup; OTEL_SERVICE_NAME from the
  // environment when no unit names the service. Both reads are bounded.
  void ReadIdentity(uint32_t pid, Record& record);
  // ProcessInfo::start_ns from /proc/PID/stat.
  void ReadStart(uint32_t pid, Record& record);

  std::string proc_root_;
  std::unordered_map<uint32_t, Record> records_;
  // Pids tried that have no record (a snapshot of a process that was gone);
  // a record says it itself (Record::snapshot_attempted): a fork or an exec
  // allocated a node here too.
  std::unordered_set<uint32_t> snapshot_attempted_;
};

// A process's start in clock ticks since boot (/proc/PID/stat) as
// ProcessInfo::start_ns: CLOCK_BOOTTIME ns, at the ticks' precision.
uint64_t StartNsOfTicks(uint64_t ticks);
// The kernel's start_boottime of a process (CLOCK_BOOTTIME ns, what BPF
// reads) as ProcessInfo::start_ns: exactly the start /proc/PID/stat gives.
uint64_t StartNsOfBoottime(uint64_t boottime_ns);
// A CLOCK_MONOTONIC time (an event's) as ProcessInfo::start_ns: the same
// clock and precision as a start read from /proc/PID/stat.
uint64_t StartNsOfMonotonic(uint64_t monotonic_ns);

// Reads a whole (/proc or kallsyms) file, not through a symbolic link as its
// last component; one past kWholeFileMax is an error.
inline constexpr size_t kWholeFileMax = size_t{256} << 20;
Result<std::string> ReadWholeFile(const std::string& path);
// Reads at most the first `max` bytes of a file (the same way).
Result<std::string> ReadFileStart(const std::string& path, size_t max);

}  // namespace arcprof
