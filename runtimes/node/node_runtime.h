// V8/Node named with no flag (docs/node.md): recognized by the v8dbg_*
// post-mortem constants a node binary (or libnode.so) exports; its
// JavaScript frames, read in BPF from V8's frame-pointer chain
// (bpf/v8.bpf.h), are named here from their SharedFunctionInfo, read through
// /proc/PID/mem, and each goes in place of the native frame that ran it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "runtimes/runtime.h"

namespace arcprof::runtimes {

// What naming needs of one V8 build: every field from the binary's v8dbg_*
// constants (V8Layout::Read) except the ScopeInfo flag bits, which V8 does
// not export (those of V8 10.x-11.x, checked on every read).
struct V8Layout {
  // Frame slots, in bytes below the frame pointer.
  uint16_t fp_function = 0, fp_context = 0, fp_bytecode_offset = 0;
  uint16_t function_shared = 0;  // JSFunction.shared
  uint16_t sfi_name = 0, sfi_script = 0;
  uint16_t map = 0, map_instance_type = 0;
  uint16_t script_name = 0, script_source = 0;
  uint16_t string_length = 0, seq_one_byte_chars = 0, seq_two_byte_chars = 0;
  uint16_t cons_first = 0, cons_second = 0, sliced_parent = 0, sliced_offset = 0, thin_actual = 0;
  uint16_t type_sfi = 0, type_scope_info = 0, type_script = 0, first_nonstring = 0;
  uint16_t repr_mask = 0, encoding_mask = 0, seq_tag = 0, cons_tag = 0, sliced_tag = 0, thin_tag = 0,
           one_byte_tag = 0;
  uint16_t scope_first_vars = 0, scope_ncontextlocals = 0;
  uint32_t smi_shift = 0;  // kSmiShiftSize + kSmiTagSize (32 without pointer compression)

  // The constants as `lookup` (symbol name -> value) gives them; nullopt when
  // one is missing (not V8, or a build without post-mortem metadata), for
  // pointer compression (4-byte tagged values, not supported), or for slots
  // the BPF walker cannot reach.
  static std::optional<V8Layout> Read(const std::function<std::optional<int64_t>(std::string_view)>& lookup);
};

// "node", "nodejs", "node20", "libnode.so.115": a file that may be V8's host.
bool MayBeNode(std::string_view path);

std::unique_ptr<Runtime> MakeNodeRuntime();

}  // namespace arcprof::runtimes
