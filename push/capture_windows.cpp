#include "push/capture_windows.h"

#include "store/capture_reader.h"

namespace arcprof::push {
using namespace arcprof::model;
using namespace arcprof::store;

std::string Destination(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t slash = url.find('/', start);
  const size_t at = url.rfind('@', slash == std::string::npos ? url.size() : slash);
  std::string out = url;
  if (at != std::string::npos && at >= start) out = url.substr(0, start) + url.substr(at + 1);
  while (!out.empty() && out.back() == '/') out.pop_back();
  return out;
}

Result<std::unique_ptr<CaptureWindows>> CaptureWindows::Open(const std::string& path) {
  auto marks = CaptureSentMarks::Open(path);
  if (!marks) return marks.error();
  return std::unique_ptr<CaptureWindows>(new CaptureWindows(std::move(*marks)));
}

Result<std::vector<WindowInfo>> CaptureWindows::Unsent(const std::string& destination) {
  auto unsent = marks_->Unsent(destination);
  if (!unsent) return unsent.error();
  return ToWindowInfos(*unsent);
}

Result<Profile> CaptureWindows::Read(const WindowInfo& window) {
  if (marks_->window_count() != 1) {
    return MakeError(marks_->path() + ": holds " + std::to_string(marks_->window_count()) +
                         " windows; push reads one window at a time only from a store or a one-window capture",
                     ErrorKind::kCapture);
  }
  return ReadCapture(marks_->path());
}

Result<void> CaptureWindows::MarkSent(const WindowInfo& window, const std::string& destination) {
  return marks_->MarkSent(window.stable_id, destination);
}

}  // namespace arcprof::push
