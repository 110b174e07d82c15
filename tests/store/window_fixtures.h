// Windows of a continuous store built from the sample profile, shared by the
// store's tests and the reports' `store info` test.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "store/window_store.h"
#include "tests/model/test_profiles.h"

namespace arcprof::testing {

constexpr uint64_t kSec = 1000000000ull;
constexpr uint64_t kBase = 1764000000ull * kSec;  // 2025-11-24

// The sample profile as a window [start, start + 60 s), its counts times `scale`.
inline Profile Window(uint64_t start_unix_ns, uint64_t scale = 1) {
  Profile p = SampleProfile();
  for (ThreadRecord& t : p.threads) {
    CallTree scaled;
    for (uint64_t i = 0; i < scale; ++i) scaled.Merge(t.tree);
    t.tree = std::move(scaled);
  }
  p.meta.start_unix_ns = start_unix_ns;
  p.meta.start_monotonic_ns = 5 * kSec;
  p.meta.end_monotonic_ns = 65 * kSec;
  p.counters["samples_total"] = static_cast<int64_t>(p.total_samples());
  return p;
}

// Three windows a minute apart, then beside them: two copies of the first
// (under another session tag, and dated 2100) and three entries named like
// windows that are not window files (a FIFO, a symbolic link, a directory).
// Returns the three windows' ids; false in `ok` when a step failed.
inline std::vector<std::string> PlantCopiesAndOddEntries(const TempDir& dir, WindowStore& store,
                                                         bool& ok) {
  std::vector<std::string> ids;
  ok = false;
  for (uint64_t i = 0; i < 3; ++i) {
    auto id = store.Append(Window(kBase + i * 60 * kSec));
    if (!id) return ids;
    ids.push_back(*id);
  }
  const std::string w0 = dir.File(ids[0] + ".db");
  const std::string start0 = ids[0].substr(0, 27);  // "<start_ms>-<end_ms>"
  std::filesystem::copy_file(w0, dir.File(start0 + "-0badc0de.db"));
  std::filesystem::copy_file(w0, dir.File("4102444800000-4102444860000-0badc0de.db"));
  ok = mkfifo(dir.File("1764000300000-1764000360000-0000f1f0.db").c_str(), 0600) == 0 &&
       symlink(w0.c_str(), dir.File("1764000360000-1764000420000-00001111.db").c_str()) == 0 &&
       mkdir(dir.File("1764000420000-1764000480000-000d1d1d.db").c_str(), 0700) == 0;
  return ids;
}

}  // namespace arcprof::testing
