#include "symbolize/module_cache.h"

namespace arcprof {

ElfFile* ModuleCache::Get(uint32_t id, const MappedElf* file) {
  if (!file) return nullptr;
  auto it = files_.find(id);
  if (it == files_.end()) it = files_.emplace(id, std::make_unique<ElfFile>(*file)).first;
  return it->second.get();
}

void ModuleCache::NoteSymbolsUsed(uint32_t id, bool was_loaded) {
  ElfFile* file = Find(id);
  if (!file || !file->symbols_loaded()) return;
  auto it = symbols_loaded_.find(id);
  if (it == symbols_loaded_.end() || !was_loaded) {
    if (it != symbols_loaded_.end()) ForgetSymbols(id);  // released and read again
    symbol_lru_.push_front(id);
    const size_t bytes = file->symbol_bytes();
    symbols_loaded_.emplace(id, Loaded{symbol_lru_.begin(), bytes});
    symbol_bytes_ += bytes;
  } else {
    symbol_lru_.splice(symbol_lru_.begin(), symbol_lru_, it->second.at);
  }
  while (symbol_bytes_ > symbol_budget_ && symbol_lru_.size() > 1) {
    const uint32_t victim = symbol_lru_.back();
    if (ElfFile* f = Find(victim)) f->ReleaseSymbols();
    ForgetSymbols(victim);
    ++symbols_released_;
  }
}

void ModuleCache::ForgetSymbols(uint32_t id) {
  auto it = symbols_loaded_.find(id);
  if (it == symbols_loaded_.end()) return;
  symbol_bytes_ -= it->second.bytes;
  symbol_lru_.erase(it->second.at);
  symbols_loaded_.erase(it);
}

void ModuleCache::DropClosed(const std::function<bool(uint32_t id)>& open) {
  for (auto it = symbols_loaded_.begin(); it != symbols_loaded_.end();) {
    if (open(it->first)) {
      ++it;
      continue;
    }
    symbol_bytes_ -= it->second.bytes;
    symbol_lru_.erase(it->second.at);
    it = symbols_loaded_.erase(it);
  }
  std::erase_if(files_, [&](const auto& entry) { return !open(entry.first); });
}

}  // namespace arcprof
