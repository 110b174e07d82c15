// The vDSO: the same image in every 64-bit process of this kernel, so arcprof
// reads its own copy (found through the auxiliary vector) once and uses it for
// every process's [vdso] mapping, to name frames and to unwind them. The copy
// lives in a sealed memfd, so that the vDSO is a file like any mapped one: the
// unwinder reads its .eh_frame through the descriptor (the rule cache) and
// libdwfl reports it as a module, exactly as for a file on disk.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "spaces/mapped_elf.h"

namespace arcprof {

inline constexpr std::string_view kVdsoModule = "[vdso]";

class VdsoImage {
 public:
  // The vDSO's file id among the address spaces' (MappedFile::file_id,
  // TimelineMapping::file_id). The file table counts its ids up from 0
  // and kNoFile is the last value: this one is never handed out to a file.
  static constexpr uint32_t kFileId = 0xfffffffeu;

  // arcprof's own vDSO image, read on the first call; nullptr when this
  // process has none (or it could not be copied).
  const MappedElf* Get();
  // True once Get() found the image (nothing is read).
  bool loaded() const { return image_ != nullptr; }

 private:
  std::unique_ptr<MappedElf> image_;
  bool tried_ = false;
};

}  // namespace arcprof
