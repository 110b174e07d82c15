#include "symbolize/elf_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace arcprof {
namespace {

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Result<uint32_t> FileCrc32(int fd) {
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<unsigned char> buffer(1 << 16);
  off_t offset = 0;
  for (;;) {
    ssize_t n = pread(fd, buffer.data(), buffer.size(), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return MakeError(std::string("reading for CRC: ") + std::strerror(errno));
    }
    if (n == 0) break;
    crc = crc32(crc, buffer.data(), static_cast<uInt>(n));
    offset += n;
  }
  return static_cast<uint32_t>(crc);
}

std::unique_ptr<ElfFile> ElfFile::FromFd(ScopedFd fd, std::string path) {
  return std::unique_ptr<ElfFile>(new ElfFile(MappedElf::FromFd(std::move(fd), std::move(path))));
}

std::unique_ptr<ElfFile> ElfFile::FromImage(std::vector<char> image, std::string name) {
  return std::unique_ptr<ElfFile>(new ElfFile(MappedElf::FromImage(std::move(image), std::move(name))));
}

const FunctionRanges& ElfFile::Ranges() {
  if (!function_ranges_loaded_) {
    function_ranges_loaded_ = true;
    if (is_elf()) {
      if (auto elf = OpenSelf(); elf.ok()) function_ranges_ = FunctionRanges::Read(elf->get());
    }
  }
  return function_ranges_;
}

std::optional<uint64_t> ElfFile::FunctionStart(uint64_t vaddr) {
  if (auto range = Ranges().Find(vaddr)) return range->start;
  return std::nullopt;
}

const ElfSymbol* ElfFile::EntryPoint(uint64_t vaddr) {
  const uint64_t entry = header().entry;
  if (!header().executable || entry == 0 || vaddr < entry) return nullptr;
  auto range = Ranges().Find(vaddr);
  if (!range || range->start != entry) return nullptr;
  if (full_.Find(entry) || dynsym_.Find(entry)) return nullptr;  // a symbol names it
  entry_symbol_.start = range->start;
  entry_symbol_.end = range->end;
  entry_symbol_.name = "_start";
  entry_symbol_.demangled = true;
  return &entry_symbol_;
}

bool ElfFile::LoadSymbols(const DebugSearchOptions& debug) {
  if (symbols_loaded_) return false;
  symbols_loaded_ = true;
  if (!is_elf()) return true;
  auto elf = OpenSelf();
  if (!elf.ok()) return true;
  if (header().has_symtab)
    full_ = SymbolTable::Load(elf->get(), SymbolTable::Section::kSymtab, elf->get());
  if (full_.empty()) {
    LoadDebugSymbols(debug);
    if (full_.empty()) {
      dynsym_ = SymbolTable::Load(elf->get(), SymbolTable::Section::kDynsym, elf->get());
      Ranges();  // stripped: most unnamed code is keyed by its FDE; counted with the symbols
    }
  }
  return true;
}

bool ElfFile::TryDebugCandidate(const std::string& candidate, bool by_build_id,
                                const DebugSearchOptions& debug) {
  ScopedFd fd(open(candidate.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (st.st_dev == dev() && st.st_ino == inode()) return false;  // the binary itself
  auto elf = OpenElfFd(fd.get());
  if (!elf.ok()) return false;
  auto header = ReadElfHeaderInfo(elf->get());
  if (!header.ok()) return false;
  const bool ids_comparable = !build_id().empty() && !header->build_id.empty();
  if (ids_comparable && build_id() != header->build_id) return false;
  if (!by_build_id && !ids_comparable && debug.verify_debuglink_crc) {
    auto crc = FileCrc32(fd.get());
    if (!crc.ok() || *crc != file_->header().debuglink_crc) return false;
  }
  // PLT stubs come from the binary: a debug file's .rela.plt has no contents.
  auto self = OpenSelf();
  SymbolTable table = SymbolTable::Load(elf->get(), SymbolTable::Section::kSymtab,
                                        self.ok() ? self->get() : nullptr);
  if (table.empty()) return false;
  full_ = std::move(table);
  debug_fd_ = std::move(fd);
  debug_path_ = candidate;
  return true;
}

void ElfFile::LoadDebugSymbols(const DebugSearchOptions& debug) {
  const std::string& id = build_id();
  if (id.size() > 2) {
    for (const std::string& dir : debug.debug_dirs) {
      if (TryDebugCandidate(dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug",
                            /*by_build_id=*/true, debug))
        return;
    }
  }
  const std::string& link = header().debuglink;
  if (link.empty() || link.find('/') != std::string::npos || path().empty() || path()[0] != '/')
    return;
  const std::string dir = DirName(path());
  std::vector<std::string> candidates = {dir + "/" + link, dir + "/.debug/" + link};
  for (const std::string& root : debug.debug_dirs) candidates.push_back(root + dir + "/" + link);
  for (const std::string& candidate : candidates) {
    if (TryDebugCandidate(candidate, /*by_build_id=*/false, debug)) return;
  }
}

ElfFile::Lookup ElfFile::Find(uint64_t vaddr, const DebugSearchOptions& debug) {
  LoadSymbols(debug);
  if (!is_elf()) return {nullptr, UnknownReason::kNoSymbols};
  if (!full_.empty()) {
    if (const ElfSymbol* s = full_.Find(vaddr)) return {s, UnknownReason::kNone};
    if (const ElfSymbol* s = EntryPoint(vaddr)) return {s, UnknownReason::kNone};
    return {nullptr, UnknownReason::kNoSymbols};
  }
  if (const ElfSymbol* s = dynsym_.Find(vaddr)) return {s, UnknownReason::kNone};
  if (const ElfSymbol* s = EntryPoint(vaddr)) return {s, UnknownReason::kNone};
  return {nullptr, header().has_symtab ? UnknownReason::kNoSymbols : UnknownReason::kStripped};
}

}  // namespace arcprof
