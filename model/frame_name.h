// The one name every view and export shows for a frame: tprof, folded stacks,
// the arcflow reports (xtree, xarc, xprof), flame graphs (SVG, HTML), speedscope,
// pprof, the differential flame graph and root matching (--root) all call
// FrameDisplayName, so one frame reads the same everywhere. Formats only add
// their own escaping (and folded its _[k]/_[j]/_[i] kind annotations).
#pragma once

#include <string>
#include <string_view>

#include "model/profile.h"

namespace arcprof::model {

// The display name of a frame, first rule that applies:
//   1. the symbol, as recorded                            "do_syscall_64"
//   2. the truncation marker                              "[truncated]"
//   3. an unnamed native frame with a module and offset   "[libfoo.so+0x1a2b]"
//   4. an unnamed frame with a module: its base name      "[libc.so.6]", "[vdso]"
//   5. nothing known                                      "[unknown]"
// Never empty. Text is returned raw: a renderer escapes it for its format.
// `module` is the frame's module path (FrameTable::module_of).
std::string FrameDisplayName(const FrameRecord& frame, std::string_view module);
// Frame `id` of `frames`.
std::string FrameDisplayName(const FrameTable& frames, uint32_t id);
// The display name with the source line of a runtime's named frame (python,
// js: its module is the file), as py-spy writes it: "alpha (/srv/app.py:12)";
// FrameDisplayName for every other frame. Views that show lines (folded
// `--lines`) name frames by it, so one function's lines are names of their own.
std::string FrameDisplayNameWithLine(const FrameRecord& frame, std::string_view module);

// Rule 3 alone: "[libfoo.so+0x1a2b]" (module base name, the instruction's file
// vaddr that the capture keeps) for an unnamed native frame; "" for named
// frames and unknown frames without a module or an offset.
std::string UnknownFrameLocation(const FrameRecord& frame, std::string_view module);

// True when the frame has no name (an Unknown(reason) frame or a truncation marker).
bool IsUnknownFrame(const FrameRecord& frame);

}  // namespace arcprof::model
