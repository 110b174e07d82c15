// The process/mapping timeline: for every pid, a list of address-space
// generations (a new one at exec, a copy of the parent's at fork), each holding
// the executable mappings stamped with the time they were added. It answers
// "which mapping covered this address in this process at this time" and knows
// nothing about files or symbols (mappings carry an opaque file id).
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace arcprof {

enum class MappingKind : uint8_t {
  kFile,      // a file-backed mapping: native code
  kVdso,      // "[vdso]"
  kAnonExec,  // anonymous executable memory: JIT code
};

struct TimelineMapping {
  static constexpr uint32_t kNoFile = 0xffffffffu;

  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  uint64_t pgoff = 0;
  uint64_t time_ns = 0;  // when it was added
  uint64_t seq = 0;      // insertion order, breaks ties between equal times
  MappingKind kind = MappingKind::kFile;
  uint32_t file_id = kNoFile;  // the caller's file table index; kNoFile when unavailable
  std::string_view module;     // stable: interned by the caller
};

struct AddressSpaceGeneration {
  uint64_t start_ns = 0;
  bool from_exec = false;  // began with an exec (not a fork or a first sighting)
  std::vector<TimelineMapping> mappings;  // sorted by start address
  uint64_t max_len = 0;                   // longest mapping: bounds the backward scan
};

struct TimelineProcess {
  uint32_t pid = 0;
  std::vector<AddressSpaceGeneration> generations;  // sorted by start_ns
  // Changed by every change, from a clock shared by all processes (so a pid
  // reused after Remove never repeats an old version); lookups cached
  // against a version stay valid while it holds.
  uint64_t version = 0;
  bool exited = false;
  uint64_t exit_ns = 0;
};

class Timeline {
 public:
  struct Hit {
    const TimelineMapping* mapping = nullptr;  // nullptr: no mapping covered the address
    // The answer is the same for every time in [valid_from, valid_until)
    // while the process's version does not change.
    uint64_t valid_from = 0;
    uint64_t valid_until = UINT64_MAX;
  };

  TimelineProcess* Find(uint32_t pid);
  const TimelineProcess* Find(uint32_t pid) const;
  // Creates a process with one generation that has existed "forever" (a
  // process found running by a snapshot or first seen through an mmap).
  TimelineProcess& GetOrCreate(uint32_t pid);

  // A new empty generation starting at t.
  void Exec(uint32_t pid, uint64_t t_ns);
  // The child's new generation starts at t with the parent's mappings that
  // existed at t (all of them when none did: the parent's events may lag).
  // Returns that generation (valid until the next change; nullptr when the
  // two pids are one).
  const AddressSpaceGeneration* Fork(uint32_t parent_pid, uint32_t child_pid, uint64_t t_ns);
  // Adds a mapping to the generation live at t. With dedupe (used for
  // snapshots, which describe state rather than events) an identical mapping
  // already present is not added again. True when it was added.
  bool AddMapping(uint32_t pid, uint64_t t_ns, TimelineMapping mapping, bool dedupe);
  // Marks the exit; the data stays for samples drained later.
  void Exit(uint32_t pid, uint64_t t_ns);
  // Forgets pid (its process exited long ago). Pointers to it die.
  void Remove(uint32_t pid) { processes_.erase(pid); }

  // The generation live at t (the first one when t precedes them all), then the
  // most recently added mapping covering addr with time <= t, falling back to
  // the earliest one added after t (a sample can race its mmap record).
  static Hit Lookup(const TimelineProcess& process, uint64_t addr, uint64_t t_ns);

  // Counts processes ever created; answers cached for unknown pids are valid
  // while it holds.
  uint64_t creations() const { return creations_; }
  size_t size() const { return processes_.size(); }
  // About how many heap bytes the processes' mappings hold (walks them).
  size_t bytes() const;
  template <typename Fn>
  void ForEachProcess(Fn&& fn) const {
    for (const auto& [pid, process] : processes_) fn(process);
  }

  // Index of the generation live at t (0 when t precedes them all).
  static size_t LiveGeneration(const TimelineProcess& process, uint64_t t_ns);

 private:
  AddressSpaceGeneration& NewGeneration(TimelineProcess& process, uint64_t t_ns);
  // pid's process, created without generations when new.
  TimelineProcess& Slot(uint32_t pid);

  // Cached lookups hold TimelineProcess pointers: an unordered_map's elements
  // stay where they are while it grows (one allocation per process, not two).
  std::unordered_map<uint32_t, TimelineProcess> processes_;
  uint64_t next_seq_ = 1;
  uint64_t version_clock_ = 0;
  uint64_t creations_ = 0;
};

}  // namespace arcprof
