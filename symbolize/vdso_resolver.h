// Resolver for the vDSO: the same image in every 64-bit process of this
// kernel, so arcprof reads its own copy (found through the auxiliary vector)
// once and resolves every process's [vdso] frames in it.
#pragma once

#include <cstdint>
#include <memory>

#include "symbolize/elf_file.h"
#include "symbolize/elf_resolver.h"

namespace arcprof {

inline constexpr std::string_view kVdsoModule = "[vdso]";

class VdsoResolver {
 public:
  SymbolizedFrame Resolve(ElfResolver& elf, const TimelineMapping& m, uint64_t addr) {
    return elf.Resolve(Image(), m, addr);
  }

 private:
  ElfFile* Image();

  std::unique_ptr<ElfFile> image_;
  bool tried_ = false;
};

}  // namespace arcprof
