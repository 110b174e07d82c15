// The capture store: one SQLite file (default arcprof.db) holding a Profile as
// folded call trees, so its size grows with the number of distinct stacks, not
// with the number of samples. The schema, the meaning of every column and the
// versioning rules are in docs/capture-format.md.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "model/profile.h"

struct sqlite3;

namespace arcprof::store {

inline constexpr const char* kDefaultCapturePath = "arcprof.db";
// PRAGMA application_id of every capture: "arcp" in ASCII.
inline constexpr int32_t kCaptureApplicationId = 0x61726370;
// The schema this build writes and the newest one it reads. Bumped only when an
// older reader would misread a newer file (see docs/capture-format.md).
inline constexpr int kCaptureSchemaVersion = 6;

// The table `arcprof push` adds to a capture to mark the windows it sent. Kept
// here with the rest of the schema: readers accept exactly these tables.
inline constexpr const char* kPushSentTableSql =
    "CREATE TABLE IF NOT EXISTS push_sent ("
    " window_id INTEGER NOT NULL REFERENCES windows(id),"
    " destination TEXT NOT NULL,"
    " sent_unix_ns INTEGER NOT NULL,"
    " PRIMARY KEY (window_id, destination)) WITHOUT ROWID";

// CRC-32 of the file's contents as stored in meta (0, 'content_crc32'): every
// row of every arcprof table but push_sent and that meta row, tables by name,
// rows by primary key. A writer that changes a capture in place (appending
// windows) must store the new value, or readers report the file as corrupt.
Result<std::string> ContentChecksum(sqlite3* db);

// Writes `profile` as one capture with one time window. The file is created
// mode 0600 as a temporary file in the same directory and renamed over `path`
// only when complete: a failure never leaves a partial file, and a symlink at
// `path` is replaced, not followed.
struct CaptureWriteOptions {
  // kCaptureSchemaVersion (compact blocks), or an older one: 1 (a row per
  // frame and node) for tools that read only schema 1; 2, 3 or 4 for
  // comparisons and for tests that break rows of the threads, modules or
  // counters tables (schema 5 keeps those as row blocks); 5 has no process
  // identity (container, pod, service).
  int schema_version = kCaptureSchemaVersion;
};
Result<void> WriteCapture(const std::string& path, const model::Profile& profile,
                          const CaptureWriteOptions& options = {});

// Reads a capture, merging every time window (and every capture, for merged
// stores) into one Profile: trees are summed node by node, counters are summed
// by name, the metadata is the first capture's. Every id read from the file is
// checked, so the returned Profile is always consistent. Errors carry a
// one-line message starting with `path` and kind ErrorKind::kCapture.
Result<model::Profile> ReadCapture(const std::string& path);

// What identifies a capture without reading it whole: the uuid of its first
// capture (random, written once by the writer and kept by copies of the file)
// and its time range in Unix ns (start_unix_ns, and the end from the
// monotonic length). The file is opened and its schema checked as ReadCapture
// does; the rows are not checked (ReadCapture does that).
struct CaptureIdentity {
  std::string uuid;
  uint64_t start_unix_ns = 0;
  uint64_t end_unix_ns = 0;
};
Result<CaptureIdentity> ReadCaptureIdentity(const std::string& path);

}  // namespace arcprof::store
