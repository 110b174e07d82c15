// The one name every view and export shows for a frame: tprof, folded stacks,
// the arcflow reports (xtree, xarc, xprof), flame graphs (SVG, HTML), speedscope,
// pprof, the differential flame graph and root matching (--root) all call
// FrameDisplayName, so one frame reads the same everywhere. Formats only add
// their own escaping (and folded its _[k]/_[j]/_[i] kind annotations).
#pragma once

#include <string>
#include <string_view>
#include <vector>

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

// Rule 3 alone: "[libfoo.so+0x1a2b]" (module base name, the instruction's file
// vaddr that the capture keeps) for an unnamed native frame; "" for named
// frames and unknown frames without a module or an offset.
std::string UnknownFrameLocation(const FrameRecord& frame, std::string_view module);

// Frames named by a name alone (a display name, a folded element): the record
// holds the name as its symbol and nothing else, `module` (a module id of
// `names`) telling kinds of names apart. Returns the id of frame (module,
// name) in `names`, adding it when new: frames that share a name are one.
uint32_t InternName(FrameTable& names, std::string_view name, uint32_t module = 0);

// The name-keyed merge of frames that share a display name: maps the frames of
// `frames` to frames of `names` named by FrameDisplayName (InternName, module
// 0), each frame's name computed once, when first asked for.
class DisplayNames {
 public:
  DisplayNames(const FrameTable& frames, FrameTable& names)
      : frames_(frames), names_(names), map_(frames.size(), kUnmapped) {}
  // The id in `names` of frame `id`'s display name; "[bad frame id]" for an
  // id outside the table.
  uint32_t operator()(uint32_t id);

 private:
  static constexpr uint32_t kUnmapped = 0xffffffffu;
  const FrameTable& frames_;
  FrameTable& names_;
  std::vector<uint32_t> map_;
};

}  // namespace arcprof::model
