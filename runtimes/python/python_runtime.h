// CPython 2.7 and 3.6+ named with no flag (docs/python.md): recognized by
// the symbols of python3.X / python2.7 or libpython3.X.so / libpython2.7.so; its
// frames read in BPF (bpf/python.bpf.h) are named here from their code
// objects, read through /proc/PID/mem.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "runtimes/runtime.h"

namespace arcprof::runtimes {

// The struct offsets of one CPython version: what BPF reads (off, by
// arcprof_py_off) and what naming reads in user space.
struct PythonOffsets {
  uint32_t major = 3;
  uint32_t minor = 0;  // major.minor
  uint16_t off[ARCPROF_PY_OFF_COUNT] = {};
  uint16_t code_firstlineno = 0;
  uint16_t code_linetable = 0;
  uint16_t code_adaptive = 0;   // co_code_adaptive: the first instruction
  // str objects (3.x); ARCPROF_PY_NO_OFFSET in 2.7, whose names are
  // PyStringObjects (bytes_size, bytes_sval).
  uint16_t unicode_state = 0;
  uint16_t unicode_length = 0;
  uint16_t unicode_ascii_size = 0;    // sizeof(PyASCIIObject): compact ASCII data
  uint16_t unicode_compact_size = 0;  // sizeof(PyCompactUnicodeObject)
  uint16_t bytes_size = 0;            // PyVarObject.ob_size
  uint16_t bytes_sval = 0;            // PyBytesObject.ob_sval
};

// From each version's internal headers (tests/runtimes/python_offsets_probe.c
// prints them; PythonOffsets.MatchTheHeaders compares).
std::optional<PythonOffsets> PythonOffsetsFor(uint32_t major, uint32_t minor);
// 3.13+: from the _Py_DebugOffsets at the start of _PyRuntime (the bytes of
// its initializer in the file). nullopt without the cookie, for a version
// other than `minor`, or a free-threaded build.
std::optional<PythonOffsets> PythonOffsetsFromDebug(std::span<const uint8_t> bytes, uint32_t minor);
// The offsets as the probe prints them ("name value" lines).
std::string PythonOffsetsText(const PythonOffsets& o);

// The source line of the instruction at byte offset `addr` of a code object
// of major.minor, from its line table (co_lnotab before 3.10, its line
// increments unsigned in 2.7; co_linetable after: three formats) and
// co_firstlineno; first_line when the table does not say (an offset before
// the first instruction, a table cut short). Bounded by the table's size
// whatever its bytes.
int PythonLine(uint32_t major, uint32_t minor, std::span<const uint8_t> table, int first_line, int64_t addr);

// 2.7 and 3.6 keep the interpreter list's head in a static variable
// (interp_head) that the exported PyInterpreterState_Head() returns: its
// address from that function's code as the file holds it at `addr` (x86-64:
// `[endbr64;] mov disp32(%rip),%rax; ret`); nullopt for any other code.
std::optional<uint64_t> PythonInterpHeadFromCode(std::span<const uint8_t> code, uint64_t addr);

std::unique_ptr<Runtime> MakePythonRuntime();

}  // namespace arcprof::runtimes
