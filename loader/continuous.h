// `arcprof continuous`: whole-machine capture for days, one window per
// --window appended to a store directory (store/window_store.h), with
// retention, crash safety and signals as in docs/continuous.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/result.h"
#include "model/profile.h"
#include "loader/record.h"

namespace arcprof {

struct ContinuousOptions {
  RecordOptions record;         // -p, -F (49 by default), -e, --call-graph, ...
  std::string store_dir;        // --store DIR
  uint64_t window_ns = 60ull * 1000000000ull;
  uint64_t retain_ns = 7ull * 86400 * 1000000000ull;  // 0: keep forever
  uint64_t max_bytes = 2ull << 30;                     // 0: no limit
  std::string log_path;         // --log FILE: stderr goes there; SIGHUP reopens it
  uint64_t retry_ns = 10ull * 1000000000ull;           // a failed window write is retried this often
  // The window in progress may hold at most this many heap bytes (frames and
  // call trees of a busy machine's distinct stacks); past it the window is
  // closed early, with a log line, and the next one runs to the scheduled
  // boundary. 0: no limit.
  uint64_t window_max_bytes = 24ull << 20;
  // Hooks for a sender of windows (--push): after the store is open and
  // sampling runs, after every window written, and before exiting.
  // on_window_written gets the window's store id and the profile just
  // written, which it may keep (the sender then need not read the window back
  // from the store); the loop frees it otherwise.
  std::function<Result<void>(const std::string& store_dir)> on_start;
  std::function<void(const std::string& id, model::Profile&& window)> on_window_written;
  std::function<void()> on_stop;
};

// The capabilities `continuous` needs when not run as root, in the order
// checked: a missing one is named in a one-line error.
Result<void> CheckContinuousCapabilities(bool java_attach);

// Runs until SIGTERM/SIGINT (exit 0 after the current window is written), or
// until every -p process exited. Returns the exit code.
Result<int> RunContinuous(const ContinuousOptions& options);

}  // namespace arcprof
