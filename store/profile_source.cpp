#include "store/profile_source.h"

#include <time.h>

#include "store/capture_store.h"
#include "store/window_store.h"

namespace arcprof::store {
using namespace arcprof::model;
namespace {

uint64_t NowUnixNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

Result<std::pair<uint64_t, uint64_t>> ResolveRange(const std::string& since, const std::string& until) {
  const uint64_t now = NowUnixNs();
  uint64_t from = 0, to = UINT64_MAX;
  if (!since.empty()) {
    auto t = ParseTimePoint(since, now);
    if (!t) return MakeError("--since: " + t.error().message);
    from = *t;
  }
  if (!until.empty()) {
    auto t = ParseTimePoint(until, now);
    if (!t) return MakeError("--until: " + t.error().message);
    to = *t;
  }
  if (from >= to) return MakeError("--since must be before --until");
  return std::pair(from, to);
}

Result<Profile> LoadProfile(const std::string& capture_path, const StoreRange& range, std::ostream& err) {
  if (!range.selected()) {
    if (!range.since.empty() || !range.until.empty()) {
      return MakeError("--since and --until need --store DIR");
    }
    return ReadCapture(capture_path);
  }
  auto times = ResolveRange(range.since, range.until);
  if (!times) return times.error();
  auto store = WindowStore::OpenForReading(range.store_dir);
  if (!store) return store.error();
  std::vector<std::string> warnings;
  auto profile = store->ReadRange(times->first, times->second, &warnings);
  for (const std::string& w : warnings) err << "arcprof: warning: " << w << '\n';
  return profile;
}

Result<void> ForEachWindow(const std::string& capture_path, const StoreRange& range, std::ostream& err,
                           const std::function<void(const Profile&)>& fn) {
  if (!range.selected()) {
    auto profile = LoadProfile(capture_path, range, err);
    if (!profile) return profile.error();
    fn(*profile);
    return {};
  }
  auto times = ResolveRange(range.since, range.until);
  if (!times) return times.error();
  auto store = WindowStore::OpenForReading(range.store_dir);
  if (!store) return store.error();
  size_t read = 0;
  for (const StoredWindow& w : store->ListRange(times->first, times->second)) {
    if (!w.unreadable.empty()) {
      err << "arcprof: warning: skipped window " << w.id << ": " << w.unreadable << '\n';
      continue;
    }
    auto profile = ReadCapture(w.path);
    if (!profile) {
      err << "arcprof: warning: skipped window " << w.id << ": " << profile.error().message << '\n';
      continue;
    }
    fn(*profile);
    ++read;
  }
  if (read == 0) {
    return MakeError(range.store_dir + ": no readable window in the time range", ErrorKind::kCapture);
  }
  return {};
}

}  // namespace arcprof::store
