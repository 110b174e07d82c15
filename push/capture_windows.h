// The windows of a capture file as a push source (push/window_source.h): a
// thin adapter of the capture's own sent marks (store/capture_sent_marks.h,
// the push_sent table; docs/capture-format.md). The stable id of a window is
// "<captures.uuid>/<windows.id>".
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "push/window_source.h"
#include "store/capture_sent_marks.h"

namespace arcprof::push {

class CaptureWindows : public WindowSource {
 public:
  // Opens the capture read-write (store::CaptureSentMarks::Open).
  static Result<std::unique_ptr<CaptureWindows>> Open(const std::string& path);

  Result<std::vector<WindowInfo>> Unsent(const std::string& destination) override;
  // Today a capture is read whole (store/capture_reader.h), so only captures
  // with exactly one window can be read window by window.
  Result<model::Profile> Read(const WindowInfo& window) override;
  Result<void> MarkSent(const WindowInfo& window, const std::string& destination) override;

 private:
  explicit CaptureWindows(std::unique_ptr<store::CaptureSentMarks> marks) : marks_(std::move(marks)) {}
  std::unique_ptr<store::CaptureSentMarks> marks_;
};

// `url` without user:password@ (what is stored and logged).
std::string Destination(const std::string& url);

}  // namespace arcprof::push
