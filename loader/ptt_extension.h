// `record --ptt`: the PTT recorder as a RecordExtension. It starts before the
// sampler, snapshots per-CPU accounting every --ptt-interval on the drain
// tick, and at the end stores everything in Profile::ptt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "loader/record_extension.h"

namespace arcprof {

struct RecordOptions;

// Whether these options record PTT: --ptt / --no-ptt, else on for
// whole-machine recordings only.
bool PttEnabled(const RecordOptions& options);

// What the PTT extension reads of a recording's options (--ptt-*).
struct PttExtensionOptions {
  std::string events;            // --ptt-events
  uint32_t interval_ms = 100;    // --ptt-interval
  uint32_t max_threads = 65536;  // --ptt-max-threads
  size_t max_window_rows = 0;    // thread rows per window (0: no limit)
  bool quiet = false;            // no line per unavailable counter
};
PttExtensionOptions PttExtensionOptionsOf(const RecordOptions& options);

std::unique_ptr<RecordExtension> MakePttExtension(PttExtensionOptions options);

}  // namespace arcprof
