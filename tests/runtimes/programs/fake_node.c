/* A hostile "node": it exports the v8dbg_* constants arcprof recognizes V8
 * by (those of node 20's V8 11.3, runtimes/node/node_runtime.cpp), and spins
 * with its frame pointer on a crafted chain of "JavaScript frames".
 * argv[1]: "loop" (two frames pointing at each other: the chain must go up
 * the stack), "deep" (a chain longer than the walk's bound), "fault" (a
 * frame pointer into unmapped memory), "garbage" (functions whose shared
 * info is not a SharedFunctionInfo: nothing may be named), "huge" (a
 * well-formed SharedFunctionInfo whose name is 100,000 characters: cut and
 * counted). argv[2]: seconds to spin. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int v8dbg_TaggedSize = 8;
int v8dbg_HeapObjectTag = 1;
int v8dbg_SmiTagMask = 1;
int v8dbg_SmiShiftSize = 31;
int v8dbg_off_fp_function = -16;
int v8dbg_off_fp_context = -8;
int v8dbg_off_fp_bytecode_offset = -40;
int v8dbg_class_JSFunction__shared__SharedFunctionInfo = 24;
int v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object = 16;
int v8dbg_class_SharedFunctionInfo__script_or_debug_info__HeapObject = 32;
int v8dbg_class_HeapObject__map__Map = 0;
int v8dbg_class_Map__instance_type__uint16_t = 12;
int v8dbg_class_Script__name__Object = 16;
int v8dbg_class_Script__source__Object = 8;
int v8dbg_class_String__length__int32_t = 12;
int v8dbg_class_SeqOneByteString__chars__char = 16;
int v8dbg_class_SeqTwoByteString__chars__char = 16;
int v8dbg_class_ConsString__first__String = 16;
int v8dbg_class_ConsString__second__String = 24;
int v8dbg_class_SlicedString__parent__String = 16;
int v8dbg_class_SlicedString__offset__SMI = 24;
int v8dbg_class_ThinString__actual__String = 16;
int v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE = 262;
int v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE = 261;
int v8dbg_type_Script__SCRIPT_TYPE = 167;
int v8dbg_FirstNonstringType = 128;
int v8dbg_StringRepresentationMask = 7;
int v8dbg_StringEncodingMask = 8;
int v8dbg_SeqStringTag = 0;
int v8dbg_ConsStringTag = 1;
int v8dbg_SlicedStringTag = 3;
int v8dbg_ThinStringTag = 5;
int v8dbg_OneByteStringTag = 8;
int v8dbg_scopeinfo_idx_first_vars = 3;
int v8dbg_scopeinfo_idx_ncontextlocals = 2;

#define FRAMES 400
static uint64_t stack_area[FRAMES * 8 + 16] __attribute__((aligned(64)));
static uint64_t function[8], sfi[8], sfi_map[4], string_map[4];
static uint8_t name[16 + 100000] __attribute__((aligned(8)));

/* Spins `iters` times with rbp = fp (the compiler's own frame pointer, if
 * any, saved around it; below the red zone). */
__attribute__((noinline)) static void spin(uint64_t fp, long iters) {
  __asm__ volatile(
      "sub $256, %%rsp\n"
      "push %%rbp\n"
      "mov %%rdi, %%rbp\n"
      "1: dec %%rsi\n"
      "jnz 1b\n"
      "pop %%rbp\n"
      "add $256, %%rsp\n"
      : "+D"(fp), "+S"(iters)
      :
      : "memory", "cc");
}

/* Frame i's frame pointer; the frame's slots below it and above it. */
static uint64_t *frame(int i) { return &stack_area[8 + i * 8]; }

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "loop";
  const double seconds = argc > 2 ? atof(argv[2]) : 2.0;
  const int huge = strcmp(mode, "huge") == 0;
  /* The function's shared info: a SharedFunctionInfo's map only for "huge". */
  sfi_map[1] = huge ? (uint64_t)262 << 32 : (uint64_t)0x1234 << 32; /* instance type at +12 */
  string_map[1] = (uint64_t)8 << 32;                                   /* a one-byte sequential string */
  sfi[0] = (uint64_t)sfi_map | 1;
  sfi[2] = (uint64_t)name | 1;
  sfi[4] = 0;
  memcpy(name, &(uint64_t){(uint64_t)string_map | 1}, 8);
  const int32_t length = 100000;
  memcpy(name + 12, &length, 4);
  memset(name + 16, 'A', 100000);
  function[3] = (uint64_t)sfi | 1;
  for (int i = 0; i < FRAMES; i++) {
    uint64_t *f = frame(i);
    f[-2] = (uint64_t)function | 1; /* the function slot */
    f[-1] = 0x1001;                 /* a tagged "context" */
    f[0] = i + 1 < FRAMES ? (uint64_t)frame(i + 1) : 0;
    f[1] = 0x401000 + i;            /* return address */
  }
  if (strcmp(mode, "loop") == 0) frame(1)[0] = (uint64_t)frame(0);
  if (strcmp(mode, "fault") == 0) frame(2)[0] = 0x600000000000ull; /* above the chain, unmapped */
  if (strcmp(mode, "deep") != 0 && strcmp(mode, "loop") != 0 && strcmp(mode, "fault") != 0) frame(3)[0] = 0;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    spin((uint64_t)frame(0), 20000000);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
  return 0;
}
