/* Prints the struct offsets arcprof reads in a CPython 2.7 or 3.6+ process, from
 * that version's own headers: the source of the per-version table in
 * runtimes/python/python_runtime.cpp, and the check that it still holds (test
 * PythonOffsets.MatchTheHeaders compiles this against each installed
 * version's headers and compares). Build: cc -DPy_BUILD_CORE
 * -I<prefix>/include/python3.X -I<prefix>/include/python3.X/internal.
 * 2.7 and 3.6 have no _PyRuntime: the root is the interpreter list's head
 * (interp_head), so runtime_interpreters_head is 0.
 * Before 3.11 the names below stand for the fields that play their part:
 * tstate_native_thread_id is PyThreadState.thread_id (pthread_self()),
 * tstate_current_frame is PyThreadState.frame, a frame is a PyFrameObject
 * (f_code, f_back, f_lasti), code_name is co_name and code_linetable is
 * co_lnotab (3.7-3.9) or co_linetable (3.10). */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_MINOR_VERSION >= 11
#include "pycore_runtime.h"
#include "pycore_interp.h"
#include "pycore_frame.h"
#include "pycore_code.h"
#else
#include <frameobject.h>
#if PY_MAJOR_VERSION == 2 || PY_MINOR_VERSION <= 6
/* no _PyRuntimeState: PyInterpreterState and PyThreadState are in pystate.h */
#elif PY_MINOR_VERSION >= 9
#include "pycore_runtime.h"
#include "pycore_interp.h"
#elif PY_MINOR_VERSION == 8
#include "pycore_pystate.h"
#else
#include "internal/pystate.h"
#endif
#endif

int main(void) {
  printf("version %d.%d\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
#if PY_MAJOR_VERSION == 2 || PY_MINOR_VERSION <= 6
  /* The root is interp_head itself (PyInterpreterState_Head() returns it). */
  printf("runtime_interpreters_head %d\n", 0);
#else
  printf("runtime_interpreters_head %d\n", (int)offsetof(_PyRuntimeState, interpreters.head));
#endif
#if PY_MINOR_VERSION >= 11
  printf("interp_threads_head %d\n", (int)offsetof(PyInterpreterState, threads.head));
  printf("tstate_next %d\n", (int)offsetof(PyThreadState, next));
  printf("tstate_native_thread_id %d\n", (int)offsetof(PyThreadState, native_thread_id));
#else
  printf("interp_threads_head %d\n", (int)offsetof(PyInterpreterState, tstate_head));
  printf("tstate_next %d\n", (int)offsetof(PyThreadState, next));
  printf("tstate_native_thread_id %d\n", (int)offsetof(PyThreadState, thread_id));
#endif
#if PY_MINOR_VERSION >= 13
  printf("tstate_current_frame %d\n", (int)offsetof(PyThreadState, current_frame));
  printf("cframe_current_frame %d\n", -1);
  printf("frame_code %d\n", (int)offsetof(_PyInterpreterFrame, f_executable));
#elif PY_MINOR_VERSION >= 11
  printf("tstate_current_frame %d\n", (int)offsetof(PyThreadState, cframe));
  printf("cframe_current_frame %d\n", (int)offsetof(_PyCFrame, current_frame));
  printf("frame_code %d\n", (int)offsetof(_PyInterpreterFrame, f_code));
#else
  printf("tstate_current_frame %d\n", (int)offsetof(PyThreadState, frame));
  printf("cframe_current_frame %d\n", -1);
  printf("frame_code %d\n", (int)offsetof(PyFrameObject, f_code));
#endif
#if PY_MINOR_VERSION >= 11
  printf("frame_previous %d\n", (int)offsetof(_PyInterpreterFrame, previous));
#else
  printf("frame_previous %d\n", (int)offsetof(PyFrameObject, f_back));
#endif
#if PY_MINOR_VERSION >= 13
  printf("frame_instr %d\n", (int)offsetof(_PyInterpreterFrame, instr_ptr));
#elif PY_MINOR_VERSION >= 11
  printf("frame_instr %d\n", (int)offsetof(_PyInterpreterFrame, prev_instr));
#else
  printf("frame_instr %d\n", (int)offsetof(PyFrameObject, f_lasti));
#endif
#if PY_MINOR_VERSION >= 11
  printf("frame_owner %d\n", (int)offsetof(_PyInterpreterFrame, owner));
#else
  printf("frame_owner %d\n", -1);
#endif
#if PY_MINOR_VERSION == 11
  printf("frame_entry %d\n", (int)offsetof(_PyInterpreterFrame, is_entry));
#else
  printf("frame_entry %d\n", -1);
#endif
  printf("code_filename %d\n", (int)offsetof(PyCodeObject, co_filename));
#if PY_MINOR_VERSION >= 11
  printf("code_name %d\n", (int)offsetof(PyCodeObject, co_qualname));
#else
  printf("code_name %d\n", (int)offsetof(PyCodeObject, co_name));
#endif
  printf("code_firstlineno %d\n", (int)offsetof(PyCodeObject, co_firstlineno));
#if PY_MINOR_VERSION >= 10
  printf("code_linetable %d\n", (int)offsetof(PyCodeObject, co_linetable));
#else
  printf("code_linetable %d\n", (int)offsetof(PyCodeObject, co_lnotab));
#endif
#if PY_MINOR_VERSION >= 11
  printf("code_adaptive %d\n", (int)offsetof(PyCodeObject, co_code_adaptive));
#else
  printf("code_adaptive %d\n", -1);
#endif
#if PY_MAJOR_VERSION >= 3
  printf("unicode_state %d\n", (int)offsetof(PyASCIIObject, state));
  printf("unicode_length %d\n", (int)offsetof(PyASCIIObject, length));
  printf("unicode_ascii_size %d\n", (int)sizeof(PyASCIIObject));
  printf("unicode_compact_size %d\n", (int)sizeof(PyCompactUnicodeObject));
  printf("bytes_size %d\n", (int)offsetof(PyVarObject, ob_size));
  printf("bytes_sval %d\n", (int)offsetof(PyBytesObject, ob_sval));
#else
  /* 2.7: names, paths and co_lnotab are all str (PyStringObject) objects. */
  printf("unicode_state %d\nunicode_length %d\nunicode_ascii_size %d\nunicode_compact_size %d\n", -1, -1, -1, -1);
  printf("bytes_size %d\n", (int)offsetof(PyVarObject, ob_size));
  printf("bytes_sval %d\n", (int)offsetof(PyStringObject, ob_sval));
#endif
  /* BPF reads the code object's 24 bytes from co_filename: the name (co_name,
   * co_qualname from 3.11) must lie within them. */
  return offsetof(PyCodeObject, co_filename) < offsetof(PyCodeObject, co_name) &&
                 offsetof(PyCodeObject, co_name) + 8 <= offsetof(PyCodeObject, co_filename) + 24
             ? 0
             : 1;
}
