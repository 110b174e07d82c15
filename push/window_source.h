// What the push thread needs from a store of windows. Thin adapters of the
// store's own sent marks (store/sent_marks.h) implement it: store_windows.h
// for a continuous store, capture_windows.h for a capture file (a store with
// one window). Interface contract:
//   - Unsent(destination): the closed windows not yet marked sent to
//     `destination`, oldest first. A window still being written is never listed.
//   - Read(window): that window's profile alone (not merged with others), with
//     meta.start_unix_ns and the monotonic start/end of the window.
//   - MarkSent(window, destination): durable before it returns (a crash after
//     it never resends; a crash before it resends the same stable id).
// All three are called from the push thread only; an implementation shared
// with a writer thread does its own locking.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/profile.h"
#include "store/sent_marks.h"

namespace arcprof::push {

struct WindowInfo {
  int64_t id = 0;          // the store's window id
  std::string stable_id;   // unique across stores and machines: "<capture uuid>/<window id>"
  uint64_t start_unix_ns = 0;
  uint64_t end_unix_ns = 0;
};

// The windows a store's Unsent() lists, as the push thread names them.
std::vector<WindowInfo> ToWindowInfos(const std::vector<store::UnsentWindow>& unsent);

class WindowSource {
 public:
  virtual ~WindowSource() = default;
  virtual Result<std::vector<WindowInfo>> Unsent(const std::string& destination) = 0;
  virtual Result<model::Profile> Read(const WindowInfo& window) = 0;
  virtual Result<void> MarkSent(const WindowInfo& window, const std::string& destination) = 0;
};

}  // namespace arcprof::push
