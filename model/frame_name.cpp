#include "model/frame_name.h"

#include <cstdio>

namespace arcprof::model {
namespace {

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsPseudoName(const std::string& name) {
  return name.size() >= 2 && name.front() == '[' && name.back() == ']';
}

}  // namespace

std::string UnknownFrameLocation(const FrameRecord& frame) {
  if (!frame.symbol.empty() || frame.kind != FrameKind::kNative || frame.module.empty() ||
      frame.address == 0 || frame.inlined) {
    return "";
  }
  const std::string base = BaseName(frame.module);
  if (base.empty()) return "";
  char offset[24];
  snprintf(offset, sizeof(offset), "+0x%llx", static_cast<unsigned long long>(frame.address));
  if (IsPseudoName(base)) return base.substr(0, base.size() - 1) + offset + "]";  // [vdso+0x..]
  return "[" + base + offset + "]";
}

std::string FrameDisplayName(const FrameRecord& frame) {
  if (!frame.symbol.empty()) return frame.symbol;
  if (frame.reason == UnknownReason::kTruncated) return "[truncated]";
  if (std::string at = UnknownFrameLocation(frame); !at.empty()) return at;
  const std::string base = BaseName(frame.module);
  if (base.empty()) return "[unknown]";
  if (IsPseudoName(base)) return base;
  return "[" + base + "]";
}

}  // namespace arcprof::model
