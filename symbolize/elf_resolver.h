// Resolver for native code in mapped ELF files (and the vDSO image): maps the
// runtime address to the file's virtual address through the mapping and the
// file's PT_LOAD segments, then looks the function up in the file's symbol
// tables (.symtab, a separate debug file, .dynsym).
#pragma once

#include <cstdint>

#include "symbolize/elf_file.h"
#include "symbolize/name_pool.h"
#include "symbolize/symbol_types.h"
#include "spaces/timeline.h"

namespace arcprof {

class ElfResolver {
 public:
  ElfResolver(DebugSearchOptions debug, NamePool& names) : debug_(std::move(debug)), names_(names) {}

  // The frame for addr in mapping m of file (nullptr: the file could not be
  // opened, Unknown(kFileUnavailable)).
  SymbolizedFrame Resolve(ElfFile* file, const TimelineMapping& m, uint64_t addr);

  const DebugSearchOptions& debug() const { return debug_; }
  uint64_t files_loaded() const { return files_loaded_; }

 private:
  DebugSearchOptions debug_;
  NamePool& names_;  // symbol names outlive the file they came from
  uint64_t files_loaded_ = 0;
};

}  // namespace arcprof
