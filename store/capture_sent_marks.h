// The sent marks of a capture file (store/sent_marks.h): the windows `arcprof
// push` delivered, kept in the capture itself in the push_sent table, which
// this class alone writes and reads:
//   push_sent(window_id, destination, sent_unix_ns), primary key
//   (window_id, destination); destination is the server URL without
//   credentials. See docs/capture-format.md.
// A window's id is "<captures.uuid>/<windows.id>".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "store/sent_marks.h"

namespace arcprof::store {

class SqlDb;

class CaptureSentMarks : public SentMarks {
 public:
  // Checks the capture at `path` the way every reader does (ReadCapture),
  // then opens it read-write (as untrusted SQLite: no triggers, no views, not
  // through a symlink) and adds the push_sent table when it has none.
  static Result<std::unique_ptr<CaptureSentMarks>> Open(const std::string& path);
  ~CaptureSentMarks() override;

  const std::string& path() const { return path_; }
  // The number of windows in the capture (when opened).
  int64_t window_count() const { return windows_; }

  Result<std::vector<UnsentWindow>> Unsent(const std::string& destination) const override;
  Result<void> MarkSent(const std::string& id, const std::string& destination) override;

 private:
  explicit CaptureSentMarks(std::string path);
  std::string path_;
  std::unique_ptr<SqlDb> db_;
  int64_t windows_ = 0;
};

}  // namespace arcprof::store
