#include "model/name_pool.h"

#include <functional>

#include "model/frame_name.h"

namespace arcprof::model {

NameKind NameKindOf(const FrameRecord& frame) {
  if (frame.inlined) return NameKind::kInlined;
  switch (frame.kind) {
    case FrameKind::kKernel: return NameKind::kKernel;
    case FrameKind::kJit: return NameKind::kJit;
    case FrameKind::kInterpreted: return NameKind::kInterpreted;
    // A runtime's own frames read as the code they stand for: a Python
    // function is interpreted code, a JavaScript function JIT code.
    case FrameKind::kPython: return NameKind::kInterpreted;
    case FrameKind::kJs: return NameKind::kJit;
    case FrameKind::kUnknown: return NameKind::kUnknown;
    case FrameKind::kNative: break;
  }
  return IsUnknownFrame(frame) ? NameKind::kUnknown : NameKind::kNative;
}

size_t NamePool::Hash(std::string_view name, NameKind kind) {
  return std::hash<std::string_view>()(name) * 31u + static_cast<size_t>(kind);
}

uint32_t NamePool::Find(std::string_view name, NameKind kind) const {
  for (auto [it, end] = index_.equal_range(Hash(name, kind)); it != end; ++it) {
    if (kinds_[it->second] == kind && names_[it->second] == name) return it->second;
  }
  return kNoName;
}

uint32_t NamePool::Intern(std::string_view name, NameKind kind) {
  const size_t hash = Hash(name, kind);
  for (auto [it, end] = index_.equal_range(hash); it != end; ++it) {
    if (kinds_[it->second] == kind && names_[it->second] == name) return it->second;
  }
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  kinds_.push_back(kind);
  index_.emplace(hash, id);
  return id;
}

}  // namespace arcprof::model
