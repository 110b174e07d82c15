// The hook for JIT symbol sources (perf maps, jitdump): anonymous executable
// memory is resolved through a per-process source when one is installed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "symbolize/symbol_types.h"

namespace arcprof {

// Symbols of one process's JIT code, versioned by time like the mapping
// timeline (the latest entry loaded at or before t_ns covering addr).
class JitSymbolSource {
 public:
  virtual ~JitSymbolSource() = default;
  virtual std::optional<JitSymbol> Find(uint64_t addr, uint64_t t_ns) = 0;
  // A method's name by the id an interpreted frame holds (HotSpot's Method*,
  // from the agent's side file), as known at t_ns; the view stays valid for
  // the source's lifetime.
  virtual std::optional<std::string_view> MethodName(uint64_t method, uint64_t t_ns) { return std::nullopt; }
  // About how many heap bytes the source holds (a daemon's -v accounting).
  virtual size_t bytes() const { return 0; }
};

// Called once per process, on its first JIT frame. May return nullptr (no
// perf map / jitdump for this process); the answer is then Unknown(kJitNoMap).
using JitSymbolSourceFactory =
    std::function<std::unique_ptr<JitSymbolSource>(const ProcessInfo& process)>;

}  // namespace arcprof
