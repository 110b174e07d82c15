// Resolver for JIT code (anonymous executable memory): one JitSymbolSource per
// process (perf map, jitdump), made by the factory a runtime extension
// installs, on the process's first JIT frame. Its answers are versioned by
// time inside the source and never cached outside it (the source grows).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "spaces/address_spaces.h"
#include "symbolize/jit_source.h"
#include "symbolize/name_pool.h"
#include "symbolize/symbol_types.h"

namespace arcprof {

class JitResolver {
 public:
  explicit JitResolver(NamePool& names) : names_(names) {}

  // Replaces the factory and drops every source made by the old one.
  void SetFactory(JitSymbolSourceFactory factory);
  bool has_factory() const { return static_cast<bool>(factory_); }

  // The frame for addr in process at t_ns: Unknown(kJitNoMap) without a
  // source. *cacheable is cleared when a source answered (it grows).
  SymbolizedFrame Resolve(const ProcessInfo& process, uint64_t addr, uint64_t t_ns, bool* cacheable);

  // The JIT code at addr with its frame facts; nullopt without a source or symbol.
  std::optional<JitSymbol> Find(const ProcessInfo& process, uint64_t addr, uint64_t t_ns);
  std::optional<std::string_view> MethodName(const ProcessInfo& process, uint64_t method, uint64_t t_ns);

  // Drops pid's source (exec replaced the image, or the process is gone).
  void Forget(uint32_t pid) { sources_.erase(pid); }
  // Lets pid's source go but remembers that it had one, so that a late
  // sample of the exited process does not read its JIT files again (its JIT
  // frames stay unnamed). Returns whether a source was let go.
  bool Release(uint32_t pid) {
    auto it = sources_.find(pid);
    if (it == sources_.end() || !it->second.source) return false;
    it->second.source.reset();
    it->second.interned.clear();
    return true;
  }
  // The name pool was cleared: every interned view is gone.
  void NamesReleased() {
    for (auto& [pid, entry] : sources_) entry.interned.clear();
  }
  size_t size() const { return sources_.size(); }
  // Sources holding tables now, and about how many bytes they hold.
  size_t live_sources() const;
  size_t bytes() const;

 private:
  struct Entry {
    std::unique_ptr<JitSymbolSource> source;
    bool tried = false;
    // The source's method-name views (valid for its lifetime) by address,
    // interned: an interpreted frame's name was hashed into the name pool
    // on every sample (1.4% of a churn daemon's CPU).
    std::unordered_map<const char*, std::string_view> interned;
  };
  NamePool& names_;  // names outlive the sources (dropped after their process)
  JitSymbolSource* Source(const ProcessInfo& process);
  JitSymbolSourceFactory factory_;
  std::unordered_map<uint32_t, Entry> sources_;
};

}  // namespace arcprof
