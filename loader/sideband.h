// Decoding of perf side-band records (MMAP2, COMM, FORK, EXIT) as opened by
// SidebandAttr(): every record ends with a sample_id {pid, tid, time}.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "spaces/address_spaces.h"

namespace arcprof {

struct SidebandEvent {
  enum class Kind { kMmap, kComm, kExec, kFork, kThreadStart, kExit, kThreadExit };
  Kind kind = Kind::kMmap;
  uint64_t time_ns = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t parent_pid = 0;  // kFork
  std::string comm;         // kComm, kExec
  MappingEvent mapping;     // kMmap
};

// Decodes one record of `size` bytes (header included). Returns nothing for
// records we do not use or that are malformed (too short, unterminated names).
std::optional<SidebandEvent> DecodeSidebandRecord(const void* record, size_t size);
// The same into `out`, whose strings keep their buffers; false (and `out`
// unspecified) for what the other returns nothing for.
bool DecodeSidebandRecord(const void* record, size_t size, SidebandEvent& out);

class AddressSpaces;

// Applies side-band events to the symbolizer in time order. Records arrive
// per CPU, so a batch is sorted before it is applied.
//
// The side band is machine-wide. A session that follows some processes (-p,
// a command) calls Follow(): then only events of those processes and of the
// children they fork (from fork events, as the BPF filter follows them) reach
// the symbolizer, so its memory follows the profiled processes, not whatever
// else the machine runs. FollowAll() turns the filter off again (after lost
// side-band records, when a fork may have been missed).
class SidebandQueue {
 public:
  void Push(SidebandEvent event);
  // Decodes a record (DecodeSidebandRecord) into the next slot; records it
  // does not use are dropped. Slots are reused from batch to batch, so an
  // event allocates nothing once its strings have grown.
  void PushRecord(const void* record, size_t size);
  void ApplyTo(AddressSpaces& spaces);
  uint64_t applied() const { return applied_; }
  uint64_t skipped() const { return skipped_; }
  void Follow(const std::vector<uint32_t>& pids);
  void FollowAll() { filtering_ = false; followed_.clear(); }
  // Followed processes whose exit was applied since the last call.
  std::vector<uint32_t> TakeExited() { return std::exchange(exited_, {}); }
  bool follows(uint32_t pid) const { return !filtering_ || followed_.count(pid) != 0; }

 private:
  static constexpr size_t kKeptSlots = 4096;
  std::vector<SidebandEvent> pending_;  // the batch: the first count_ slots
  uint32_t count_ = 0;
  std::vector<uint32_t> order_;  // ApplyTo's scratch: the batch in time order
  uint64_t applied_ = 0;
  uint64_t skipped_ = 0;
  bool filtering_ = false;
  std::unordered_set<uint32_t> followed_;
  std::vector<uint32_t> exited_;
  // ApplyTo's scratch, sorted: a set allocated a node per exit.
  std::vector<uint32_t> exited_in_batch_;
};

}  // namespace arcprof
