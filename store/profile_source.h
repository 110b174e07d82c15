// Where `report`, `export` and `diff` read a profile from: a capture file
// (-i FILE) or a time range of a continuous store (--store DIR --since 30m
// [--until 5m]); a range is the sum of its windows (store/window_store.h).
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "common/result.h"
#include "model/profile.h"

namespace arcprof::store {

struct StoreRange {
  std::string store_dir;  // --store DIR; empty: read the capture file
  std::string since;      // --since: default the oldest window
  std::string until;      // --until: default now
  bool selected() const { return !store_dir.empty(); }
};

// The range in Unix ns; one-line errors for times that do not parse or an
// empty range.
Result<std::pair<uint64_t, uint64_t>> ResolveRange(const std::string& since, const std::string& until);

// Reads the capture file, or the windows of the range summed. A window that
// cannot be read is skipped with one warning line on `err`.
Result<model::Profile> LoadProfile(const std::string& capture_path, const StoreRange& range, std::ostream& err);

// Calls `fn` with each window of the range in time order (or once with the
// whole capture file), reading one at a time. Unreadable windows are skipped
// with a warning on `err`.
Result<void> ForEachWindow(const std::string& capture_path, const StoreRange& range, std::ostream& err,
                           const std::function<void(const model::Profile&)>& fn);

}  // namespace arcprof::store
