// The symbol tables of one mapped ELF file (spaces/mapped_elf.h), read on the
// first lookup and given back under a memory budget: .symtab, a separate
// debug file's, .dynsym, and the functions the unwind tables delimit.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/frame.h"
#include "common/scoped_fd.h"
#include "spaces/mapped_elf.h"
#include "symbolize/elf_symbols.h"

namespace arcprof {

class DebuginfodFetcher;

struct DebugSearchOptions {
  std::vector<std::string> debug_dirs;  // roots holding .build-id/ and mirrored paths
  bool verify_debuglink_crc = true;     // when build-ids cannot be compared
  // Stripped files with a build-id are looked up here in the background
  // (symbolize/debuginfod.h); nullptr: no debuginfod.
  DebuginfodFetcher* debuginfod = nullptr;
};

class ElfFile {
 public:
  // The symbols of `file`, which must outlive this (the address spaces own
  // it); read on the first Find. A file that is not ELF gives
  // Unknown(kNoSymbols) for every lookup and says why in header_error().
  explicit ElfFile(const MappedElf& file) : file_(&file) {}
  // Owning its file (tests, fuzzers): reads the ELF headers now.
  static std::unique_ptr<ElfFile> FromFd(ScopedFd fd, std::string path);
  // An in-memory image. The bytes are owned by the ElfFile.
  static std::unique_ptr<ElfFile> FromImage(std::vector<char> image, std::string name);

  struct Lookup {
    const ElfSymbol* symbol = nullptr;
    UnknownReason reason = UnknownReason::kNone;
  };

  // The ELF vaddr of a file offset (see FileOffsetToVaddr).
  std::optional<uint64_t> OffsetToVaddr(uint64_t file_offset) const {
    return file_->OffsetToVaddr(file_offset);
  }
  // The function covering vaddr: .symtab of the file, else of a separate
  // debug file, else .dynsym; Unknown(kStripped) when only .dynsym was found
  // and it does not cover vaddr, Unknown(kNoSymbols) when a full table does not.
  // A program's entry point that no symbol covers is "_start" over the FDE
  // that starts at e_entry (stripped programs keep crt1's unwind entry).
  Lookup Find(uint64_t vaddr, const DebugSearchOptions& debug);

  // The start of the function covering vaddr as the unwind tables delimit
  // it (FunctionRanges, read on the first call or with a stripped file's
  // symbols), for code no symbol names. nullopt when no FDE's range covers
  // vaddr: code without unwind information is never given a neighbour's start.
  std::optional<uint64_t> FunctionStart(uint64_t vaddr);

  // Reads the symbol tables if not done yet; true when this call read them.
  bool LoadSymbols(const DebugSearchOptions& debug);
  bool symbols_loaded() const { return symbols_loaded_; }
  // Heap bytes of the symbol tables read (0 before LoadSymbols).
  size_t symbol_bytes() const {
    return full_.bytes() + dynsym_.bytes() + function_ranges_.bytes();
  }
  // Gives the symbol tables back; the next Find reads them again. Names
  // handed out before must have been copied (the symbolizer interns them).
  void ReleaseSymbols() {
    full_ = SymbolTable();
    dynsym_ = SymbolTable();
    function_ranges_ = FunctionRanges();
    function_ranges_loaded_ = false;
    debug_fd_.reset();
    debug_path_.clear();
    symbols_loaded_ = false;
  }

  bool is_elf() const { return file_->is_elf(); }
  const std::string& header_error() const { return file_->header_error(); }
  const std::string& path() const { return file_->path(); }
  const std::string& build_id() const { return file_->build_id(); }
  const ElfHeaderInfo& header() const { return file_->header(); }
  int fd() const { return file_->fd(); }
  dev_t dev() const { return file_->dev(); }
  ino_t inode() const { return file_->inode(); }
  // The separate debug file whose .symtab is used, "" when none.
  const std::string& debug_path() const { return debug_path_; }
  int debug_fd() const { return debug_fd_.get(); }
  // True the first time it is asked: one debuginfod request per file.
  bool FirstDebuginfodRequest() {
    const bool first = !debuginfod_requested_;
    debuginfod_requested_ = true;
    return first;
  }

 private:
  explicit ElfFile(std::unique_ptr<MappedElf> owned) : owned_(std::move(owned)), file_(owned_.get()) {}
  Result<ElfPtr> OpenSelf() { return file_->Open(); }
  bool TryDebugCandidate(const std::string& candidate, bool by_build_id,
                         const DebugSearchOptions& debug);
  void LoadDebugSymbols(const DebugSearchOptions& debug);
  const FunctionRanges& Ranges();
  // "_start" when vaddr is in the entry point's FDE and no symbol covers it.
  const ElfSymbol* EntryPoint(uint64_t vaddr);

  std::unique_ptr<MappedElf> owned_;  // FromFd, FromImage
  const MappedElf* file_;

  bool symbols_loaded_ = false;
  bool debuginfod_requested_ = false;
  SymbolTable full_;    // .symtab of the file or of its debug file
  SymbolTable dynsym_;  // only consulted when full_ is empty
  bool function_ranges_loaded_ = false;
  FunctionRanges function_ranges_;  // .eh_frame_hdr and .eh_frame
  ElfSymbol entry_symbol_;          // "_start", see EntryPoint
  ScopedFd debug_fd_;
  std::string debug_path_;
};

// The CRC-32 that .gnu_debuglink stores (the zlib polynomial) over a whole file.
Result<uint32_t> FileCrc32(int fd);

}  // namespace arcprof
