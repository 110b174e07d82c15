#include "symbolize/elf_resolver.h"

#include "symbolize/debuginfod.h"

namespace arcprof {

SymbolizedFrame ElfResolver::Resolve(ElfFile* file, const TimelineMapping& m, uint64_t addr) {
  SymbolizedFrame frame;
  frame.module = m.module;
  frame.kind = FrameKind::kNative;
  const uint64_t file_offset = addr - m.start + m.pgoff;
  frame.offset = file_offset;
  if (!file) {
    frame.reason = UnknownReason::kFileUnavailable;
    return frame;
  }
  if (file->LoadSymbols(debug_)) ++files_loaded_;
  std::optional<uint64_t> vaddr = file->OffsetToVaddr(file_offset);
  if (!vaddr) {
    frame.reason = UnknownReason::kNoSymbols;
    return frame;
  }
  frame.offset = *vaddr;
  ElfFile::Lookup found = file->Find(*vaddr, debug_);
  if (!found.symbol) {
    frame.reason = found.reason;
    // Unnamed code is keyed by its function like named code: the start of
    // the FDE whose range covers it (stripped files keep .eh_frame_hdr and
    // .eh_frame); 0 when none does, and the frame keeps its instruction.
    if (auto start = file->FunctionStart(*vaddr)) frame.address = *start;
    // Stripped: ask debuginfod in the background. This sample stays unnamed
    // (with its offset); the capture's frames are named once the file is in.
    if (found.reason == UnknownReason::kStripped && debug_.debuginfod &&
        !file->build_id().empty() && file->FirstDebuginfodRequest()) {
      debug_.debuginfod->Request(file->build_id());
    }
    return frame;
  }
  frame.symbol = names_.Intern(found.symbol->name);
  frame.address = found.symbol->start;
  return frame;
}

}  // namespace arcprof
