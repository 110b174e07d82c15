// The ELF facts of a mapped file that address spaces need, read through
// libelf (elfutils): the type, PT_LOAD segments (file offset to virtual
// address), build-id and .gnu_debuglink. Works on an open file descriptor or
// a byte buffer; nothing here touches paths or the process table. Symbol
// tables are symbolize/'s (elf_symbols.h).
#pragma once

#include <libelf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace arcprof {

struct ElfDeleter {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using ElfPtr = std::unique_ptr<Elf, ElfDeleter>;

// elf_begin on a file descriptor in ELF_C_READ mode: libelf then reads with
// pread on demand instead of mapping the file, so a file truncated under us
// gives an error instead of SIGBUS. The descriptor must outlive the handle.
Result<ElfPtr> OpenElfFd(int fd);
// elf_memory on a caller-owned buffer that must outlive the handle.
Result<ElfPtr> OpenElfMemory(std::span<char> image);

struct LoadSegment {
  uint64_t offset = 0;
  uint64_t vaddr = 0;
  uint64_t filesz = 0;
  uint64_t memsz = 0;
};

struct ElfHeaderInfo {
  uint16_t type = 0;  // ET_EXEC, ET_DYN, ...
  std::vector<LoadSegment> loads;
  std::string build_id;  // lowercase hex, "" when absent
  std::string debuglink;  // .gnu_debuglink file name, "" when absent
  uint32_t debuglink_crc = 0;
  bool has_symtab = false;  // a .symtab section exists (not stripped)
  uint64_t entry = 0;       // e_entry
  // A program rather than a library: ET_EXEC, or ET_DYN marked DF_1_PIE
  // (libc.so.6 and ld.so have entry points too, but are not programs).
  bool executable = false;
};

// Reads the ELF type, PT_LOAD segments, build-id note and .gnu_debuglink.
Result<ElfHeaderInfo> ReadElfHeaderInfo(Elf* elf);

// Maps an offset in the file to the ELF virtual address through the PT_LOAD
// segment that contains it. This is what makes PIE, non-PIE, shared libraries
// and unusual link addresses all work the same way: the runtime address gives
// the file offset (addr - mapping start + mapping pgoff), and the segment gives
// the vaddr the symbol table speaks in.
std::optional<uint64_t> FileOffsetToVaddr(const std::vector<LoadSegment>& loads,
                                          uint64_t offset);

// The inverse: the file offset of an ELF virtual address, through the
// PT_LOAD segment whose file bytes hold it (nullopt in .bss or outside).
std::optional<uint64_t> VaddrToFileOffset(const std::vector<LoadSegment>& loads, uint64_t vaddr);

}  // namespace arcprof
