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
#include <vector>

#include "runtimes/runtime.h"

namespace arcprof::runtimes {

// Bytes of a Code object read at once (every field naming uses lies within).
constexpr size_t kV8CodeHeaderRead = 128;

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

  // Lines (docs/node.md, "Lines"); without these a frame gets its
  // function's first line. Exported: the SharedFunctionInfo's function data,
  // the bytecode's start, the Code fields for deoptimization data and source
  // positions, an InstructionStream's first instruction, the types, the
  // code kinds and the deoptimization data's indexes. Derived, V8 11.x
  // (not exported, and every read through them is checked: an
  // InstructionStream's instructions must be where its Code says): the
  // BytecodeArray's source positions after its length, constant pool and
  // handler table; the Code's InstructionStream, instruction start, flags
  // and instruction size after its source positions.
  bool lines = false;
  uint16_t sfi_function_data = 0, array_length = 0, array_data = 0;
  uint16_t bytecode_positions = 0, bytecode_data = 0;
  uint16_t code_deopt = 0, code_positions = 0, code_stream = 0, code_start = 0, code_flags = 0, code_size = 0;
  uint16_t stream_start = 0;
  uint16_t type_code = 0, type_stream = 0, type_bytecode = 0, type_byte_array = 0, type_fixed_array = 0,
           type_weak_fixed_array = 0;
  uint16_t kind_mask = 0, kind_shift = 0, kind_baseline = 0, kind_interpreted = 0;
  uint16_t deopt_inlined_count = 0, deopt_literals = 0, deopt_sfi = 0, deopt_inlining = 0;
  // V8's kBytecodeSizes[3][count] (its symbol in the binary): baseline
  // code's lines; empty when the binary lacks it.
  std::vector<uint8_t> bytecode_sizes;

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
