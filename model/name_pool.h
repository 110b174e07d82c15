// The names of a fold by name (model/fold_by_name.h), each held once with its
// kind: the one pool of display names that the flame graph, folded stacks and
// arcflow read. A name's id is dense from 0; the same name of two kinds is two
// ids (a kernel function and a native one of one name are two boxes of a
// flame graph).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/profile.h"

namespace arcprof::model {

// What a name names. The frame kinds are in the order the flame graph sorts
// boxes of one name by (reports/flamegraph.h, FlameKind follows it).
enum class NameKind : uint8_t {
  kRoot,         // the root of a view ("all")
  kGroup,        // a level above the frames: host, service, container, pod, process, thread
  kKernel,       // a frame, of its kind (NameKindOf)
  kNative,
  kJit,
  kInterpreted,
  kInlined,
  kUnknown,      // a frame without a name of its own ("[libc.so.6]", "[unknown]")
  kFunction,     // a frame of any kind, where a view does not tell kinds apart (arcflow)
  kPruned,       // what a cut left in place of frames ("[pruned]")
};

// The kind of a frame as the views tell frames apart: inlined first, then its
// FrameKind (a python frame is kInterpreted, a js frame kJit); a native frame
// without a name (IsUnknownFrame) is kUnknown.
NameKind NameKindOf(const FrameRecord& frame);

class NamePool {
 public:
  static constexpr uint32_t kNoName = 0xffffffffu;
  // The id of (name, kind), adding it when new.
  uint32_t Intern(std::string_view name, NameKind kind);
  // The id of (name, kind), or kNoName.
  uint32_t Find(std::string_view name, NameKind kind) const;

  const std::string& name(uint32_t id) const { return names_[id]; }
  NameKind kind(uint32_t id) const { return kinds_[id]; }
  size_t size() const { return names_.size(); }

 private:
  static size_t Hash(std::string_view name, NameKind kind);

  std::vector<std::string> names_;
  std::vector<NameKind> kinds_;
  // Hash of (name, kind) -> id: the name itself is held only in names_.
  std::unordered_multimap<size_t, uint32_t> index_;
};

}  // namespace arcprof::model
