// One "sent" state per window and destination, owned by the store that holds
// the windows: a sender (push/) asks which windows a destination has not had
// and marks each one once it is delivered. Two stores implement it, each
// keeping the marks in its own on-disk form (docs/capture-format.md):
//   - WindowStore (store/window_store.h): DIR/<id>.sent files, the
//     destinations one per line;
//   - CaptureSentMarks (store/capture_sent_marks.h): the push_sent table
//     inside a capture file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace arcprof::store {

// A closed window not yet sent to some destination.
struct UnsentWindow {
  // What MarkSent takes, unique across stores and machines: a store window id
  // ("<start_ms>-<end_ms>-<session>") or "<capture uuid>/<window id>".
  std::string id;
  // The window's number in its store: windows.id in a capture, the start in
  // Unix ms in a window store.
  int64_t number = 0;
  uint64_t start_unix_ns = 0;
  uint64_t end_unix_ns = 0;
};

class SentMarks {
 public:
  virtual ~SentMarks() = default;
  // The closed windows not yet marked sent to `destination`, oldest first. A
  // window still being written is never listed.
  virtual Result<std::vector<UnsentWindow>> Unsent(const std::string& destination) const = 0;
  // Marks window `id` sent to `destination` (one line, the URL without
  // credentials); durable before it returns: a crash after it never resends,
  // a crash before it resends the same id. Marking twice is harmless.
  virtual Result<void> MarkSent(const std::string& id, const std::string& destination) = 0;
};

}  // namespace arcprof::store
