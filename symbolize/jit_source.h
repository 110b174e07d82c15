// The hook for JIT symbol sources (perf maps, jitdump): anonymous executable
// memory is resolved through a per-process source when one is installed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "common/frame.h"

namespace arcprof {

struct ProcessInfo;

struct JitSymbol {
  std::string_view name;  // must stay valid for the Symbolizer's lifetime
  uint64_t start = 0;     // absolute code address
  FrameKind kind = FrameKind::kJit;  // kInterpreted for a runtime's interpreter
  // Methods the JIT inlined into `name` at this address, outermost first
  // (`name` itself not repeated); nullptr when none. Stays valid for the
  // Symbolizer's lifetime, like `name`.
  const std::vector<std::string_view>* inlined = nullptr;
};

// Symbols of one process's JIT code, versioned by time like the mapping
// timeline (the latest entry loaded at or before t_ns covering addr).
class JitSymbolSource {
 public:
  virtual ~JitSymbolSource() = default;
  virtual std::optional<JitSymbol> Find(uint64_t addr, uint64_t t_ns) = 0;
};

// Called once per process, on its first JIT frame. May return nullptr (no
// perf map / jitdump for this process); the answer is then Unknown(kJitNoMap).
using JitSymbolSourceFactory =
    std::function<std::unique_ptr<JitSymbolSource>(const ProcessInfo& process)>;

}  // namespace arcprof
