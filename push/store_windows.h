// The windows of a continuous store directory (store/window_store.h) as a
// push source. Sent marks are the store's DIR/<id>.sent files; the stable id
// of a window is its store id ("<start_ms>-<end_ms>-<session>", unique across
// restarts and, with the random session tag, across machines).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"
#include "push/window_source.h"
#include "store/window_store.h"

namespace arcprof::push {

class StoreWindows : public WindowSource {
 public:
  // Reads the store at `dir` (no writer lock: continuous holds it and may
  // append and apply retention while windows are sent).
  static Result<std::unique_ptr<StoreWindows>> Open(const std::string& dir);

  Result<std::vector<WindowInfo>> Unsent(const std::string& destination) override;
  // The window kept by Keep() when it is that one (once: a resend reads the
  // store), else the store's.
  Result<model::Profile> Read(const WindowInfo& window) override;
  Result<void> MarkSent(const WindowInfo& window, const std::string& destination) override;

  // The profile of window `id` as the writer just wrote it to the store (from
  // any thread): the next Read of that window returns it instead of reading
  // the file back (a third of the push thread's CPU under churn). One window
  // is kept, the last one given; the one kept before is dropped. What is
  // pushed is the same (tests/push, PushContinuous.AKeptWindowPushesTheBytesOfItsReadBack).
  void Keep(const std::string& id, model::Profile&& window);

 private:
  explicit StoreWindows(store::WindowStore store) : store_(std::move(store)) {}
  store::WindowStore store_;
  std::mutex kept_mutex_;
  std::string kept_id_;  // "" : none
  model::Profile kept_;
};

// True when `path` is a directory (a continuous store) rather than a capture file.
bool IsStoreDirectory(const std::string& path);

}  // namespace arcprof::push
