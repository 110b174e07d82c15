// Resolver for kernel addresses: /proc/kallsyms, read on the first kernel
// frame, behind a direct-mapped cache of answers (kernel text does not move
// during a recording).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbolize/kallsyms.h"
#include "symbolize/symbol_types.h"

namespace arcprof {

class KernelResolver {
 public:
  explicit KernelResolver(std::string kallsyms_path);

  // Sets *cache_hit when the answer came from the cache.
  SymbolizedFrame Resolve(uint64_t addr, bool* cache_hit);
  // Heap bytes held: the symbol table and the answer cache.
  size_t bytes() const;

 private:
  const KernelSymbols* Symbols();

  struct CacheEntry {
    uint64_t addr = 0;
    bool used = false;
    SymbolizedFrame frame;
  };

  std::string kallsyms_path_;
  std::optional<KernelSymbols> symbols_;
  bool tried_ = false;
  std::vector<CacheEntry> cache_;
};

}  // namespace arcprof
