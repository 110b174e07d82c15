// The plain types the symbolizer's parts and callers share: a named frame,
// with the address spaces' types (spaces/space_types.h: MappingEvent,
// ProcessInfo, MappedFile, AddressSpaceFiles; spaces/jit_code.h: JitSymbol). No behaviour:
// the parts include this, the facade (symbolizer.h) sits above them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/frame.h"
#include "spaces/jit_code.h"
#include "spaces/space_types.h"

namespace arcprof {

struct SymbolizedFrame {
  std::string_view module;  // stable for the Symbolizer's lifetime
  std::string_view symbol;  // "" when unknown
  // Symbol start: file virtual address for ELF, absolute for kernel. For an
  // unnamed ELF frame the start of its function from .eh_frame_hdr, 0 when
  // the file has none.
  uint64_t address = 0;
  FrameKind kind = FrameKind::kUnknown;
  UnknownReason reason = UnknownReason::kNone;
  // The instruction itself in the module's terms: the ELF vaddr for files and
  // the vDSO, the absolute address otherwise. Set for unknown frames too, so a
  // later offline pass can still name them.
  uint64_t offset = 0;
  // JIT code only: the methods inlined at this address, outermost first
  // (JitSymbol::inlined); nullptr when none.
  const std::vector<std::string_view>* inlined = nullptr;
};

}  // namespace arcprof
