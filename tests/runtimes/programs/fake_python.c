/* A hostile "python3.11": it exports what arcprof recognizes CPython 3.11 by
 * (_PyRuntime, Py_Version, PyCode_Type) with a thread state for its main
 * thread, but its frame chain is corrupt. argv[1]: "loop" (a frame whose
 * previous is itself: the walk must stop at its bound), "fault" (previous
 * points at unmapped memory), "garbage" (code pointers to objects that are
 * not code objects). argv[2]: seconds to spin. Offsets of CPython 3.11
 * (runtimes/python/python_runtime.cpp).
 * Built with -DFAKE_PY27 it is a hostile "python2.7" instead: PyCode_Type,
 * PyString_Type, PyInterpreterState_Head() returning its interp_head, and
 * 2.7's PyFrameObject layout, with the same corrupt chains. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

char PyCode_Type[512];
#ifdef FAKE_PY27
char PyString_Type[512];
static char *interp_head;
/* Built with -O2: `mov interp_head(%rip),%rax; ret`, as CPython's. */
__attribute__((noinline)) char *PyInterpreterState_Head(void) { return interp_head; }
#define _PyEval_EvalFrameDefault PyEval_EvalFrameEx
#else
const unsigned long Py_Version = 0x030b02f0;
char _PyRuntime[4096];
#endif

static char interp[256];
static char tstate[512];
#ifndef FAKE_PY27
static char cframe[64];
#endif
static char frames[4][128];
static char not_code[512];

static void put(char *base, int off, uint64_t v) { memcpy(base + off, &v, 8); }

/* The native frame arcprof replaces with the Python frames it read. */
__attribute__((noinline)) void _PyEval_EvalFrameDefault(double seconds) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  volatile uint64_t x = 0;
  do {
    for (int i = 0; i < 1000000; i++) x += (uint64_t)i * i % 7;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "loop";
  const double seconds = argc > 2 ? atof(argv[2]) : 2.0;
  put(not_code, 8, 0x1234);                 /* ob_type: not &PyCode_Type */
#ifdef FAKE_PY27
  interp_head = interp;
  put(interp, 8, (uint64_t)tstate);                 /* tstate_head */
  put(tstate, 0, 0);                                /* next */
  put(tstate, 144, (uint64_t)pthread_self());       /* thread_id */
  put(tstate, 16, (uint64_t)frames[0]);             /* frame */
  for (int i = 0; i < 4; i++) {
    put(frames[i], 32, (uint64_t)not_code);         /* f_code */
    put(frames[i], 120, 0);                         /* f_lasti */
    put(frames[i], 24, i < 3 ? (uint64_t)frames[i + 1] : 0); /* f_back */
  }
  if (strcmp(mode, "loop") == 0) put(frames[3], 24, (uint64_t)frames[0]);
  if (strcmp(mode, "fault") == 0) put(frames[3], 24, 0x10);
#else
  put(_PyRuntime, 40, (uint64_t)interp);  /* interpreters.head */
  put(interp, 16, (uint64_t)tstate);       /* threads.head */
  put(tstate, 8, 0);                        /* next */
  put(tstate, 160, (uint64_t)gettid());     /* native_thread_id */
  put(tstate, 56, (uint64_t)cframe);        /* cframe */
  put(cframe, 8, (uint64_t)frames[0]);      /* current_frame */
  for (int i = 0; i < 4; i++) {
    put(frames[i], 32, (uint64_t)not_code); /* f_code */
    put(frames[i], 56, 0);                  /* prev_instr */
    put(frames[i], 48, i < 3 ? (uint64_t)frames[i + 1] : 0);
  }
  if (strcmp(mode, "loop") == 0) put(frames[3], 48, (uint64_t)frames[0]);
  if (strcmp(mode, "fault") == 0) put(frames[3], 48, 0x10);
#endif
  _PyEval_EvalFrameDefault(seconds);
  return 0;
}
