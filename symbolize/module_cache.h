// The module cache: the symbol tables of the mapped files the address spaces
// hold open (spaces/file_table.h), one ElfFile per file id, shared by all
// mappings of the file in all processes, kept within a memory budget.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <unordered_map>

#include "spaces/mapped_elf.h"
#include "symbolize/elf_file.h"

namespace arcprof {

class ModuleCache {
 public:
  explicit ModuleCache(size_t symbol_budget_bytes = kSymbolBudgetBytes) : symbol_budget_(symbol_budget_bytes) {}

  // The symbols of file `id`, whose open file is `file` (the address
  // spaces'); nullptr when file is nullptr (closed or never opened).
  ElfFile* Get(uint32_t id, const MappedElf* file);

  // Lets go of the tables of every file for which open(id) is false (the
  // address spaces closed it).
  void DropClosed(const std::function<bool(uint32_t id)>& open);

  // Symbol tables held at once, in bytes: past this, the tables of the
  // files used least recently are given back (and read again when needed),
  // so memory does not follow how many big binaries the machine runs. A
  // single file larger than the budget is still held while it is in use.
  static constexpr size_t kSymbolBudgetBytes = 32u << 20;  // the default
  // Call after each lookup in file `id` (`was_loaded`: its symbols were
  // read before the lookup): keeps the symbol tables within the budget.
  void NoteSymbolsUsed(uint32_t id, bool was_loaded);
  size_t symbol_bytes() const { return symbol_bytes_; }
  uint64_t symbol_tables_released() const { return symbols_released_; }

 private:
  ElfFile* Find(uint32_t id) const {
    auto it = files_.find(id);
    return it == files_.end() ? nullptr : it->second.get();
  }

  std::unordered_map<uint32_t, std::unique_ptr<ElfFile>> files_;
  // Files whose symbols are loaded, most recently used first, with the
  // bytes counted for each.
  struct Loaded {
    std::list<uint32_t>::iterator at;
    size_t bytes = 0;
  };
  std::list<uint32_t> symbol_lru_;
  std::unordered_map<uint32_t, Loaded> symbols_loaded_;
  size_t symbol_budget_;
  size_t symbol_bytes_ = 0;
  uint64_t symbols_released_ = 0;
  void ForgetSymbols(uint32_t id);
};

}  // namespace arcprof
