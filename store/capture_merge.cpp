#include "store/capture_merge.h"

#include <sys/stat.h>

#include <algorithm>
#include <limits>

#include "store/capture_store.h"
#include "model/profile_merge.h"
#include "store/window_store.h"

namespace arcprof::store {
using namespace arcprof::model;
namespace {

// A capture file, or every window of a continuous store directory.
Result<Profile> ReadInput(const std::string& path, std::vector<std::string>& notes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    auto store = WindowStore::OpenForReading(path);
    if (!store) return store.error();
    std::vector<std::string> warnings;
    auto profile = store->ReadRange(0, std::numeric_limits<uint64_t>::max(), &warnings);
    for (const std::string& w : warnings) notes.push_back(w);
    return profile;
  }
  return ReadCapture(path);
}

}  // namespace

Result<MergeResult> MergeCaptures(const std::vector<std::string>& paths, bool merge_hosts) {
  if (paths.empty()) return MakeError("merge: no input captures");
  MergeResult result;
  Profile& out = result.profile;
  std::vector<std::string> hosts;
  bool dropped_ptt = false;
  for (size_t i = 0; i < paths.size(); ++i) {
    auto read = ReadInput(paths[i], result.notes);
    if (!read) return read.error();
    Profile& in = *read;
    if (i > 0 && (in.meta.event != out.meta.event || in.meta.frequency_hz != out.meta.frequency_hz)) {
      return MakeError(paths[i] + ": sampled " + in.meta.event + " at " + std::to_string(in.meta.frequency_hz) +
                           " Hz, " + paths[0] + " " + out.meta.event + " at " +
                           std::to_string(out.meta.frequency_hz) +
                           " Hz: merge needs captures of one event and frequency",
                       ErrorKind::kCapture);
    }
    dropped_ptt = dropped_ptt || in.ptt.recorded;
    in.ptt = PttData{};
    // Each thread keeps its machine (an input that is a merge keeps its own).
    for (ThreadRecord& thread : in.threads) {
      if (merge_hosts) {
        // Folded as one machine: equal pid and tid are one thread, whichever
        // machine's process held them.
        thread.host.clear();
        thread.process_start_ns = 0;
        continue;
      }
      if (thread.host.empty()) thread.host = in.meta.host.empty() ? "[unknown host]" : in.meta.host;
      if (std::find(hosts.begin(), hosts.end(), thread.host) == hosts.end()) hosts.push_back(thread.host);
    }
    MergeProfile(out, in);
  }
  if (merge_hosts) {
    out.meta.host = "merged (" + std::to_string(paths.size()) + " inputs)";
  } else {
    out.meta.host.clear();
    for (const std::string& host : hosts) out.meta.host += (out.meta.host.empty() ? "" : ",") + host;
  }
  out.meta.target = "merge of " + std::to_string(paths.size()) + " inputs";
  if (dropped_ptt) {
    result.notes.push_back(
        "per-thread time (PTT) is not carried into a merge (its threads and intervals are per machine); "
        "report --view ptt reads the single captures");
  }
  return result;
}

}  // namespace arcprof::store
