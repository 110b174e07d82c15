// Decoding of perf side-band records (MMAP2, COMM, FORK, EXIT) as opened by
// SidebandAttr(): every record ends with a sample_id {pid, tid, time}.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbolize/symbolizer.h"

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

class Symbolizer;

// Applies side-band events to the symbolizer in time order. Records arrive
// per CPU, so a batch is sorted before it is applied.
class SidebandQueue {
 public:
  void Push(SidebandEvent event) { pending_.push_back(std::move(event)); }
  void ApplyTo(Symbolizer& symbolizer);
  uint64_t applied() const { return applied_; }

 private:
  std::vector<SidebandEvent> pending_;
  uint64_t applied_ = 0;
};

}  // namespace arcprof
