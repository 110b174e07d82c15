// Address spaces: what is known of every process and its memory over time,
// fed by process events (perf side-band records or a /proc snapshot). A
// process/mapping timeline (timeline.h), a registry of names, owners and
// threads (process_registry.h) and the mapped files held open (file_table.h,
// the vDSO in vdso_image.h). It answers "which file was mapped at this
// address in this process at this time" and knows nothing of symbols: the
// symbolizer (symbolize/) names what it finds here, the unwinder (unwind/)
// reads the files' unwind tables.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spaces/space_types.h"

namespace arcprof {

class MappedElf;
struct TimelineProcess;

// The module name of anonymous executable memory (JIT code).
inline constexpr std::string_view kJitModule = "JITCODE";

struct AddressSpacesOptions {
  std::string proc_root = "/proc";
  // What is known about a process (mappings, names) is dropped this long
  // after it exited, in the time of the events; files no remembered process
  // maps are closed then. Samples are drained long before.
  uint64_t exited_retention_ns = 10'000'000'000;
};

struct AddressSpacesStats {
  uint64_t processes_forgotten = 0;  // dropped after exit + retention
  uint64_t files_closed = 0;
};

class AddressSpaces {
 public:
  explicit AddressSpaces(AddressSpacesOptions options = {});
  ~AddressSpaces();
  AddressSpaces(const AddressSpaces&) = delete;
  AddressSpaces& operator=(const AddressSpaces&) = delete;

  // Reads /proc/*/maps, comm, cmdline of every running process as of time t_ns.
  void SnapshotAllProcesses(uint64_t t_ns);
  void SnapshotProcess(uint32_t pid, uint64_t t_ns);
  // Reads pid from /proc now when it was never seen nor tried.
  void EnsureKnown(uint32_t pid, uint64_t t_ns);

  // Timeline events, in the CLOCK_MONOTONIC domain of the samples. Mapped files
  // are opened at once through /proc/PID/map_files or /proc/PID/root while the
  // process lives, so samples of short-lived processes still resolve later.
  void OnMmap(uint32_t pid, uint64_t t_ns, const MappingEvent& mapping);
  // `exited`: the caller already holds this process's exit event (applied
  // after this one): /proc is not read for a process that is gone.
  void OnExec(uint32_t pid, uint64_t t_ns, std::string_view comm, bool exited = false);
  void OnComm(uint32_t pid, uint32_t tid, uint64_t t_ns, std::string_view comm);
  void OnFork(uint32_t parent_pid, uint32_t child_pid, uint64_t t_ns);
  void OnExit(uint32_t pid, uint64_t t_ns);

  // Drops what is known about processes that exited more than
  // exited_retention_ns before t_ns, and closes the files only they mapped.
  // The event handlers call it as event time passes (at most every 5 s);
  // a long-lived session may call it too.
  void ForgetExited(uint64_t t_ns);
  // Changes whenever ForgetExited dropped something: caches keyed by pid or
  // file id (the unwinder's) check KnowsProcess / FileOpen then.
  uint64_t forget_epoch() const;
  bool KnowsProcess(uint32_t pid) const;
  // Known and its exit event seen (false for a process never seen).
  bool ProcessExited(uint32_t pid) const;
  bool FileOpen(uint32_t file_id) const;

  // The process as last known (comm, command line, uid); nullptr when never
  // seen or forgotten.
  const ProcessInfo* Process(uint32_t pid) const;
  // The kernel's start of pid's process (read by PTT) where the registry has
  // `late_ns` (a fork event's time, one 10 ms tick late): later records of
  // the process carry `start_ns`. Nothing changes for another start.
  void CorrectStart(uint32_t pid, uint64_t late_ns, uint64_t start_ns);
  // What is recorded of pid, an empty record created when there is none yet
  // (a JIT source is made from it).
  const ProcessInfo& Info(uint32_t pid);
  // The thread name last seen for tid (falls back to the process comm).
  std::string_view ThreadName(uint32_t pid, uint32_t tid) const;

  // The file mapped at addr in pid at t_ns, if any (and open).
  std::optional<MappedFile> FindMappedFile(uint32_t pid, uint64_t addr, uint64_t t_ns);
  // Every open file mapped in pid's address space live at t_ns (see
  // AddressSpaceFiles).
  std::optional<AddressSpaceFiles> MappedFiles(uint32_t pid, uint64_t t_ns);

  // Changes whenever anything known about pid's address space changes (exec,
  // mappings, exit): answers for its native code hold while it does not.
  uint64_t ProcessVersion(uint32_t pid) const;
  // Which process held pid at t_ns: the start of its incarnation (the fork
  // that made it, or the first exec seen; 0 when it was found running or is
  // unknown). A pid reused by a new process has a later incarnation.
  uint64_t Incarnation(uint32_t pid, uint64_t t_ns) const;

  // Module name (as frames carry it) -> GNU build-id (hex) of every mapped
  // file that has one (forgotten processes' files included), for captures
  // and pprof mappings.
  std::map<std::string, std::string> ModuleBuildIds() const;

  // The process's timeline (timeline.h), for lookups by address; nullptr
  // when unknown. Valid until the next event or forget pass.
  const TimelineProcess* TimelineOf(uint32_t pid) const;
  // Counts processes ever created: answers cached for unknown pids hold
  // while it does not change.
  uint64_t creations() const;
  // The open file with this id (the vDSO's image for VdsoImage::kFileId);
  // nullptr when closed or never opened.
  const MappedElf* File(uint32_t file_id);

  // Called from OnMmap for every mapping event (after the mapping is added),
  // so that an extension learns which processes map its runtime (libjvm.so)
  // from the side band instead of reading every process's /proc maps. One
  // observer per owner; an empty one removes the owner's. With replay_known,
  // the new observer is first told the current file mappings of the
  // processes already known (a whole-machine or -p recording's snapshot).
  using MappingObserver = std::function<void(uint32_t pid, const MappingEvent& mapping)>;
  void SetMappingObserver(const void* owner, MappingObserver observer, bool replay_known = false);

  // What a user of the address spaces (the symbolizer) keeps per process or
  // per file follows them through these calls; one listener at a time.
  class Listener {
   public:
    virtual ~Listener() = default;
    // pid's image was replaced (exec) or is new (a fork's child).
    virtual void ImageReplaced(uint32_t pid) = 0;
    // A forget pass at t_ns, before anything is dropped: every remembered
    // process that exited, with its exit time.
    virtual void Exited(const std::vector<std::pair<uint32_t, uint64_t>>& exited, uint64_t t_ns) = 0;
    // A forget pass dropped these processes and closed the files no
    // remembered process maps.
    virtual void Forgot(const std::vector<uint32_t>& pids) = 0;
  };
  void SetListener(Listener* listener);

  const AddressSpacesStats& stats() const;
  size_t open_files() const;
  size_t processes() const;  // remembered now
  size_t exited_processes() const;  // of those, exited (walks them)
  // Heap bytes of the timeline's mappings and the registry's records (walks them).
  size_t bytes() const;
  const std::string& proc_root() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace arcprof
