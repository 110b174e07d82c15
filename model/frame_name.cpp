#include "model/frame_name.h"

#include <cstdio>

namespace arcprof::model {
namespace {

std::string BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool IsPseudoName(const std::string& name) {
  return name.size() >= 2 && name.front() == '[' && name.back() == ']';
}

}  // namespace

std::string UnknownFrameLocation(const FrameRecord& frame, std::string_view module) {
  if (!frame.symbol.empty() || frame.kind != FrameKind::kNative || module.empty() ||
      frame.address == 0 || frame.inlined) {
    return "";
  }
  const std::string base = BaseName(module);
  if (base.empty()) return "";
  char offset[24];
  snprintf(offset, sizeof(offset), "+0x%llx", static_cast<unsigned long long>(frame.address));
  if (IsPseudoName(base)) return base.substr(0, base.size() - 1) + offset + "]";  // [vdso+0x..]
  return "[" + base + offset + "]";
}

std::string FrameDisplayName(const FrameRecord& frame, std::string_view module) {
  if (!frame.symbol.empty()) return frame.symbol;
  if (frame.reason == UnknownReason::kTruncated) return "[truncated]";
  if (std::string at = UnknownFrameLocation(frame, module); !at.empty()) return at;
  const std::string base = BaseName(module);
  if (base.empty()) return "[unknown]";
  if (IsPseudoName(base)) return base;
  return "[" + base + "]";
}

std::string FrameDisplayName(const FrameTable& frames, uint32_t id) {
  const FrameRecord& frame = frames.at(id);
  return FrameDisplayName(frame, frames.module_of(frame));
}

std::string FrameDisplayNameWithLine(const FrameRecord& frame, std::string_view module) {
  std::string name = FrameDisplayName(frame, module);
  if (IsRuntimeKind(frame.kind) && !frame.symbol.empty()) {
    name += " (";
    name += module;
    name += ':' + std::to_string(SourceLine(frame.address)) + ')';
  }
  return name;
}

bool IsUnknownFrame(const FrameRecord& frame) {
  return frame.symbol.empty() || frame.reason != UnknownReason::kNone;
}

}  // namespace arcprof::model
