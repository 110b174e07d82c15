// The store of continuous capture (`arcprof continuous --store DIR`): a
// directory with one capture file per closed time window. Why files and not
// one SQLite database is in docs/capture-format.md ("Continuous stores").
//
//   DIR/store.conf      key=value lines: format, host, window_s, retain_s, max_bytes
//   DIR/<id>.db         one closed window, a complete capture (readable with -i)
//   DIR/<id>.sent       the destinations the window was delivered to, one per line
//   DIR/.lock           held (flock) by the one process writing the store
//   DIR/.<id>.db.tmp.*  a window being written; never read, removed by the next writer
//
// A window id is stable for the life of the window and unique across hosts and
// restarts: "<start_unix_ms>-<end_unix_ms>-<session>", start and end in Unix
// milliseconds (13 digits, so ids sort by time), session = 8 hex digits drawn
// at the start of the writing process. Senders use it as an idempotency key.
//
// A window is identified by its content, not only by its name: the capture
// inside names its time range and carries a random capture uuid. An entry
// named like a window that is not a regular file, whose content is another
// window (a file copied or renamed), or that is a copy of a window already
// listed is listed with `unreadable` set: it is never summed, sent or counted
// (docs/continuous.md, "Reading a store").
//
// API for senders (push/store_windows.h adapts it to push::WindowSource): the
// store's sent marks (store/sent_marks.h): Unsent(destination) gives the
// windows not yet delivered there, oldest first; MarkSent(id, destination)
// adds the destination to DIR/<id>.sent and fsyncs it before returning
// (idempotent); and Read(id), one window's profile alone. Retention removes a
// window's marker with the window.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/scoped_fd.h"
#include "model/profile.h"
#include "store/sent_marks.h"

namespace arcprof::store {

struct StoredWindow {
  std::string id;
  std::string path;          // DIR/<id>.db
  uint64_t start_unix_ns = 0;  // from the id (millisecond precision)
  uint64_t end_unix_ns = 0;
  uint64_t bytes = 0;        // size of the file on disk
  bool sent = false;         // delivered to at least one destination
  std::vector<std::string> sent_to;  // the destinations in DIR/<id>.sent
  std::string capture_uuid;  // of the capture inside ("" when it cannot be read)
  // Why this entry is not a window ("" for a window): "a FIFO", "a copy of
  // window ID", "holds the window ..., not the one its name says".
  std::string unreadable;
};

struct StoreConfig {
  std::string host;
  uint64_t window_s = 0;
  uint64_t retain_s = 0;   // 0: keep forever
  uint64_t max_bytes = 0;  // 0: no limit
};

struct RetentionResult {
  size_t removed = 0;
  size_t removed_unsent = 0;
  uint64_t freed_bytes = 0;
};

class WindowStore : public SentMarks {
 public:
  // For writing: creates DIR (mode 0700) if missing, checks that it is a real
  // directory owned by this user and writable, takes the writer lock, and
  // removes temporary files a killed writer left. One-line errors.
  static Result<WindowStore> OpenForWriting(const std::string& dir);
  // For reading: DIR must exist and be a directory. Reading needs no lock:
  // windows appear by rename, complete or not at all.
  static Result<WindowStore> OpenForReading(const std::string& dir);

  const std::string& dir() const { return dir_; }

  // Writes one closed window as DIR/<id>.db and returns its id. On failure
  // (disk full, ...) nothing is left behind and the store is unchanged.
  Result<std::string> Append(const model::Profile& window);
  // Every entry named like a window, oldest first (by name); those that are
  // not windows have `unreadable` set. Other files are ignored. A window's
  // identity is read once per file (cached by inode, size and times).
  std::vector<StoredWindow> List() const;
  // Windows overlapping [since, until) in Unix ns, oldest first.
  std::vector<StoredWindow> ListRange(uint64_t since_unix_ns, uint64_t until_unix_ns) const;
  Result<model::Profile> Read(const std::string& id) const;
  // SentMarks: the windows not yet sent to `destination`, oldest first (never
  // an entry that is not a window), and marking one sent.
  Result<std::vector<UnsentWindow>> Unsent(const std::string& destination) const override;
  Result<void> MarkSent(const std::string& id, const std::string& destination) override;
  // Sums the windows overlapping [since, until). A window that cannot be read
  // (corrupt, truncated) and an entry that is not a window are skipped with
  // one line each in `warnings`. Errors when no window lies in the range.
  Result<model::Profile> ReadRange(uint64_t since_unix_ns, uint64_t until_unix_ns,
                            std::vector<std::string>* warnings) const;

  // Removes the oldest windows while any is older than retain_s (by its end)
  // or the windows add up to more than max_bytes; the newest window is kept.
  RetentionResult ApplyRetention(uint64_t retain_s, uint64_t max_bytes, uint64_t now_unix_ns);
  uint64_t SizeOnDisk() const;

  Result<void> WriteConfig(const StoreConfig& config);
  StoreConfig ReadConfig() const;

 private:
  explicit WindowStore(std::string dir) : dir_(std::move(dir)) {}
  struct Identity {
    uint64_t inode = 0, size = 0, mtime_ns = 0, ctime_ns = 0;
    bool read = false;  // the capture's identity could be read
    std::string uuid;
    uint64_t start_unix_ns = 0, end_unix_ns = 0;
  };
  std::string dir_;
  mutable std::map<std::string, Identity> identities_;  // file name -> what is inside
  std::string session_;
  ScopedFd lock_;
};

// The start and end in Unix milliseconds that name a window of [start, end)
// in Unix ns (rounded to the nearest millisecond; end never before start).
std::pair<uint64_t, uint64_t> WindowNameMs(uint64_t start_unix_ns, uint64_t end_unix_ns);
// Parses "<start_ms>-<end_ms>-<8 hex>" (the part before ".db").
std::optional<StoredWindow> ParseWindowId(const std::string& id);

// "30m", "2h", "7d", "90s", "1500ms" -> nanoseconds. Nothing for bad text.
std::optional<uint64_t> ParseDurationNs(const std::string& text);
// "2GB", "500MB", "10k", "1048576" -> bytes (powers of 1024). Nothing for bad text.
std::optional<uint64_t> ParseSize(const std::string& text);
// A point in time for --since/--until: a duration ago ("30m"), "now", Unix
// seconds ("@1764133200"), or an ISO date-time in UTC or with an offset
// ("2026-11-26T05:10:00Z", "2026-11-26 05:10", "2026-11-26T05:10:00+01:00", or
// "05:10[:00]" today);
// without a zone it is local time.
Result<uint64_t> ParseTimePoint(const std::string& text, uint64_t now_unix_ns);

// A wall-clock time as ISO 8601 UTC to the second ("2026-11-27T17:08:00Z").
std::string UtcTime(uint64_t unix_ns);

}  // namespace arcprof::store
