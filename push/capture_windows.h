// The windows of a capture file as a push source (push/window_source.h).
//
// Sent marks live in the capture itself, in a table this file owns:
//   push_sent(window_id, destination, sent_unix_ns), primary key
//   (window_id, destination); destination is the server URL without
//   credentials. See docs/capture-format.md.
// The stable id of a window is "<captures.uuid>/<windows.id>".
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "push/window_source.h"

namespace arcprof::store {
class SqlDb;
}

namespace arcprof::push {

class CaptureWindows : public WindowSource {
 public:
  // Opens the capture read-write (as untrusted SQLite: no triggers, no views).
  static Result<std::unique_ptr<CaptureWindows>> Open(const std::string& path);
  ~CaptureWindows() override;

  Result<std::vector<WindowInfo>> Unsent(const std::string& destination) override;
  // Today a capture is read whole (store/capture_store.h), so only captures
  // with exactly one window can be read window by window.
  Result<model::Profile> Read(const WindowInfo& window) override;
  Result<void> MarkSent(const WindowInfo& window, const std::string& destination) override;

 private:
  explicit CaptureWindows(std::string path);
  std::string path_;
  std::unique_ptr<store::SqlDb> db_;
  int64_t windows_ = 0;
};

// `url` without user:password@ (what is stored and logged).
std::string Destination(const std::string& url);

}  // namespace arcprof::push
