/* Prints the struct offsets arcprof reads in a CPython 3.11+ process, from
 * that version's own internal headers: the source of the per-version table
 * in runtimes/python/python_offsets.cpp, and the check that it still holds
 * (test PythonOffsets.MatchTheHeaders compiles this against each installed
 * version's headers and compares). Build: cc -DPy_BUILD_CORE
 * -I<prefix>/include/python3.X -I<prefix>/include/python3.X/internal. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include "pycore_runtime.h"
#include "pycore_interp.h"
#include "pycore_frame.h"
#include "pycore_code.h"

int main(void) {
  printf("version %d.%d\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
  printf("runtime_interpreters_head %d\n", (int)offsetof(_PyRuntimeState, interpreters.head));
  printf("interp_threads_head %d\n", (int)offsetof(PyInterpreterState, threads.head));
  printf("tstate_next %d\n", (int)offsetof(PyThreadState, next));
  printf("tstate_native_thread_id %d\n", (int)offsetof(PyThreadState, native_thread_id));
#if PY_MINOR_VERSION >= 13
  printf("tstate_current_frame %d\n", (int)offsetof(PyThreadState, current_frame));
  printf("cframe_current_frame %d\n", -1);
  printf("frame_code %d\n", (int)offsetof(_PyInterpreterFrame, f_executable));
#else
  printf("tstate_current_frame %d\n", (int)offsetof(PyThreadState, cframe));
  printf("cframe_current_frame %d\n", (int)offsetof(_PyCFrame, current_frame));
  printf("frame_code %d\n", (int)offsetof(_PyInterpreterFrame, f_code));
#endif
  printf("frame_previous %d\n", (int)offsetof(_PyInterpreterFrame, previous));
#if PY_MINOR_VERSION >= 13
  printf("frame_instr %d\n", (int)offsetof(_PyInterpreterFrame, instr_ptr));
#else
  printf("frame_instr %d\n", (int)offsetof(_PyInterpreterFrame, prev_instr));
#endif
  printf("frame_owner %d\n", (int)offsetof(_PyInterpreterFrame, owner));
#if PY_MINOR_VERSION >= 12
  printf("frame_entry %d\n", -1);
#else
  printf("frame_entry %d\n", (int)offsetof(_PyInterpreterFrame, is_entry));
#endif
  printf("code_filename %d\n", (int)offsetof(PyCodeObject, co_filename));
  printf("code_firstlineno %d\n", (int)offsetof(PyCodeObject, co_firstlineno));
  printf("code_linetable %d\n", (int)offsetof(PyCodeObject, co_linetable));
  printf("code_adaptive %d\n", (int)offsetof(PyCodeObject, co_code_adaptive));
  printf("unicode_state %d\n", (int)offsetof(PyASCIIObject, state));
  printf("unicode_length %d\n", (int)offsetof(PyASCIIObject, length));
  printf("unicode_ascii_size %d\n", (int)sizeof(PyASCIIObject));
  printf("unicode_compact_size %d\n", (int)sizeof(PyCompactUnicodeObject));
  printf("bytes_size %d\n", (int)offsetof(PyVarObject, ob_size));
  printf("bytes_sval %d\n", (int)offsetof(PyBytesObject, ob_sval));
  /* arcprof reads co_name and co_qualname right after co_filename. */
  return offsetof(PyCodeObject, co_qualname) == offsetof(PyCodeObject, co_filename) + 16 ? 0 : 1;
}
