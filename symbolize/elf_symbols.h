// Function symbol tables read through libelf (elfutils); the ELF header
// facts (segments, build-id) are spaces/elf_header.h's.
// Works on an open file descriptor or on a byte buffer (the vDSO image, fuzz
// inputs); nothing here touches paths or the process table.
#pragma once

#include <libelf.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "spaces/elf_header.h"

namespace arcprof {

// The value (ELF virtual address) of the defined symbol `name` of any type,
// from .dynsym, else .symtab: the data a runtime exports (CPython's
// _PyRuntime, Py_Version). nullopt when neither section defines it.
std::optional<uint64_t> FindSymbolValue(Elf* elf, std::string_view name);
// The same with the symbol's size (st_size): an exported table's extent.
std::optional<std::pair<uint64_t, uint64_t>> FindSymbolValueAndSize(Elf* elf, std::string_view name);
// Every defined symbol whose name starts with `prefix` (at most `max`), in
// one pass: from .dynsym, else .symtab when .dynsym has none. A runtime's
// many exported constants (V8's v8dbg_*) without one scan each.
std::vector<std::pair<std::string, uint64_t>> FindSymbolValuesWithPrefix(Elf* elf, std::string_view prefix,
                                                                          size_t max);

// Functions as the unwind tables delimit them, which a stripped file keeps
// since the unwinder needs them: one [start, end) per FDE. The starts come
// from the binary search table of .eh_frame_hdr (sorted), each length from
// the FDE the entry points to in .eh_frame (its pc_range, in the pointer
// encoding of the CIE's 'R' augmentation). Both sections are found by name,
// whatever their type (PROGBITS, or SHT_X86_64_UNWIND as gold writes them
// for clang's objects). Only the table layout gcc, clang, GNU ld, gold and
// lld emit is read (datarel sdata4 entries, a udata4/sdata4 count); a table
// that does not fit its section or is not sorted gives no ranges, and an FDE
// that cannot be read (outside .eh_frame, an unknown CIE, a pc_begin that
// disagrees with the table) gives its function no range, so nothing is
// attributed to it.
class FunctionRanges {
 public:
  static FunctionRanges Read(Elf* elf);

  struct Range {
    uint64_t start = 0;
    uint64_t end = 0;  // exclusive
  };
  // The FDE whose range covers vaddr; nullopt when none does (code without
  // unwind information, padding between functions), never a neighbour.
  std::optional<Range> Find(uint64_t vaddr) const;

  bool empty() const { return starts_.empty(); }
  size_t size() const { return starts_.size(); }
  size_t bytes() const { return starts_.capacity() * sizeof(uint64_t) + sizes_.capacity() * sizeof(uint32_t); }

 private:
  std::vector<uint64_t> starts_;  // sorted, unique
  std::vector<uint32_t> sizes_;   // 0: the FDE could not be read
};

struct ElfSymbol {
  uint64_t start = 0;  // ELF virtual address
  uint64_t end = 0;    // exclusive
  std::string_view name;  // demangled once Find() returned it
  bool demangled = false;
};

// FUNC and IFUNC symbols of one symbol section, sorted by address, one per
// address (aliases resolved by preference), zero sizes extended to the next
// symbol (or the end of the symbol's section).
class SymbolTable {
 public:
  enum class Section { kSymtab, kDynsym };
  // Names are shown without symbol versions. With plt_source (the binary
  // itself, whose .rela.plt a separate debug file lacks), PLT stubs are added
  // as "name@plt".
  static SymbolTable Load(Elf* elf, Section section, Elf* plt_source = nullptr);

  // The symbol covering vaddr, with its name demangled, or nullptr.
  const ElfSymbol* Find(uint64_t vaddr);

  bool empty() const { return symbols_.empty(); }
  size_t size() const { return symbols_.size(); }
  // Heap bytes held (names, symbols, names demangled so far), approximately.
  size_t bytes() const {
    return names_bytes_ + symbols_.capacity() * sizeof(ElfSymbol) + demangled_bytes_;
  }

 private:
  std::unique_ptr<char[]> names_;  // NUL-terminated names the views point into
  size_t names_bytes_ = 0;
  size_t demangled_bytes_ = 0;
  std::vector<ElfSymbol> symbols_;
  std::deque<std::string> demangled_names_;  // deque: views stay valid as it grows
};

// Demangles a C++ (Itanium ABI) name; returns "" when it is not one.
std::string Demangle(std::string_view mangled);

}  // namespace arcprof
