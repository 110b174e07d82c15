// Names frames in the vDSO: arcprof's own copy of it (spaces/vdso_image.h),
// the same image in every 64-bit process of this kernel, read once.
#pragma once

#include <cstdint>
#include <memory>

#include "spaces/mapped_elf.h"
#include "spaces/timeline.h"
#include "spaces/vdso_image.h"
#include "symbolize/elf_file.h"
#include "symbolize/elf_resolver.h"

namespace arcprof {

class VdsoResolver {
 public:
  // `image`: the address spaces' vDSO image (nullptr when there is none).
  SymbolizedFrame Resolve(ElfResolver& elf, const MappedElf* image, const TimelineMapping& m, uint64_t addr) {
    if (image && !symbols_) symbols_ = std::make_unique<ElfFile>(*image);
    return elf.Resolve(image ? symbols_.get() : nullptr, m, addr);
  }

 private:
  std::unique_ptr<ElfFile> symbols_;
};

}  // namespace arcprof
