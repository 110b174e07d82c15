/* A hostile "node": it exports the v8dbg_* constants arcprof recognizes V8
 * by (those of node 20's V8 11.3, runtimes/node/node_runtime.cpp), and spins
 * with its frame pointer on a crafted chain of "JavaScript frames".
 * argv[1]: "loop" (two frames pointing at each other: the chain must go up
 * the stack), "deep" (a chain longer than the walk's bound), "fault" (a
 * frame pointer into unmapped memory), "garbage" (functions whose shared
 * info is not a SharedFunctionInfo: nothing may be named), "huge" (a
 * well-formed SharedFunctionInfo whose name is 100,000 characters: cut and
 * counted), "code" (the constants lines need too, and frames whose return
 * addresses are in crafted JIT code: headers whose Code lies, a source
 * position table that never ends, one larger than any read, inlining ids
 * that go round; nothing may hang, each is counted). argv[2]: seconds to
 * spin. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
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
/* Lines (the "code" mode reads them; the others too, harmlessly). */
int v8dbg_class_SharedFunctionInfo__function_data__Object = 8;
int v8dbg_class_FixedArrayBase__length__SMI = 8;
int v8dbg_class_FixedArray__data__uintptr_t = 16;
int v8dbg_class_BytecodeArray__data__uintptr_t = 54;
int v8dbg_class_Code__deoptimization_data__FixedArray = 16;
int v8dbg_class_Code__source_position_table__ByteArray = 24;
int v8dbg_class_InstructionStream__instruction_start__uintptr_t = 16;
int v8dbg_type_Code__CODE_TYPE = 245;
int v8dbg_type_InstructionStream__INSTRUCTION_STREAM_TYPE = 252;
int v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE = 191;
int v8dbg_type_ByteArray__BYTE_ARRAY_TYPE = 190;
int v8dbg_type_FixedArray__FIXED_ARRAY_TYPE = 175;
int v8dbg_type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE = 240;
int v8dbg_CodeKindFieldMask = 15;
int v8dbg_CodeKindFieldShift = 0;
int v8dbg_CodeKindBaseline = 11;
int v8dbg_CodeKindInterpretedFunction = 10;
int v8dbg_DeoptimizationDataInlinedFunctionCountIndex = 1;
int v8dbg_DeoptimizationDataLiteralArrayIndex = 2;
int v8dbg_DeoptimizationDataSharedFunctionInfoIndex = 6;
int v8dbg_DeoptimizationDataInliningPositionsIndex = 7;

#define FRAMES 400
/* The crafted frames live on the thread's stack, as V8's do: the walk takes
 * an rbp outside the MiB above sp for a register of frame-pointer-less code
 * and looks for a saved frame pointer instead (bpf/v8.bpf.h), so a chain in
 * .bss would never be walked. */
static uint64_t *stack_area;
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

/* Maps (an instance type at +12) and the objects of the "code" mode. */
static uint64_t map_of(uint16_t type) {
  uint64_t *m = calloc(4, 8);
  m[1] = (uint64_t)type << 32;
  return (uint64_t)m | 1;
}
static uint64_t smi(int64_t v) { return (uint64_t)v << 32; }
/* A ByteArray of n bytes, filled with `fill` (its length a Smi). */
static uint64_t byte_array(uint64_t map, size_t n, uint8_t fill) {
  uint64_t *a = calloc(2 + (n + 7) / 8, 8);
  a[0] = map;
  a[1] = smi((int64_t)n);
  memset(a + 2, fill, n);
  return (uint64_t)a | 1;
}
/* Appends v zigzag- and VLQ-encoded (a source position table's number). */
static size_t vlq(uint8_t *out, int64_t v) {
  uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  size_t n = 0;
  do {
    out[n] = (uint8_t)(u & 0x7f) | (u > 0x7f ? 0x80 : 0);
    u >>= 7;
  } while (out[n++] & 0x80);
  return n;
}
#define CODE_REGION (64 << 10)
/* One region of crafted JIT code: an InstructionStream header before its
 * first 64-byte line, its Code saying the instructions cover the region. */
static uint8_t *code_region(uint8_t *base, uint64_t stream_map, uint64_t code_map, uint64_t deopt,
                            uint64_t positions, uint32_t size) {
  uint64_t *code = calloc(16, 8);
  uint64_t *header = (uint64_t *)(base + 64 - 16);
  header[0] = stream_map;
  header[1] = (uint64_t)code | 1;
  code[0] = code_map;
  code[2] = deopt;
  code[3] = positions;
  code[4] = (uint64_t)header | 1;
  code[5] = (uint64_t)(base + 64);
  code[6] = 13; /* flags: TurboFan */
  code[7] = size;
  return base + 64;
}

/* The same spin run from `code` (a copy of the loop in the crafted JIT
 * code: the sampled pc is there). */
__attribute__((noinline)) static void spin_at(uint64_t fp, long iters, void *code) {
  __asm__ volatile(
      "sub $256, %%rsp\n"
      "push %%rbp\n"
      "mov %%rdi, %%rbp\n"
      "call *%%rdx\n"
      "pop %%rbp\n"
      "add $256, %%rsp\n"
      : "+D"(fp), "+S"(iters), "+d"(code)
      :
      : "memory", "cc");
}
static const uint8_t kLoop[] = {0x48, 0xff, 0xce, 0x75, 0xfb, 0xc3}; /* 1: dec %rsi; jnz 1b; ret */

/* An address above `at` that nothing maps: the end of the run of mappings
 * that holds it (the stack's, on this machine nothing follows it). */
static uint64_t unmapped_above(uint64_t at) {
  FILE *maps = fopen("/proc/self/maps", "r");
  uint64_t lo, hi, end = 0;
  char line[512];
  int changed = 1;
  while (maps && changed) {
    changed = 0;
    rewind(maps);
    while (fgets(line, sizeof(line), maps)) {
      if (sscanf(line, "%lx-%lx", &lo, &hi) != 2) continue;
      if ((lo <= at && at < hi) || (end && lo == end)) {
        if (hi > end) end = hi, changed = 1;
      }
    }
  }
  if (maps) fclose(maps);
  return end ? end + 4096 * 16 : 0x600000000000ull;
}

/* Frame i's frame pointer; the frame's slots below it and above it. */
static uint64_t *frame(int i) { return &stack_area[8 + i * 8]; }

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "loop";
  const double seconds = argc > 2 ? atof(argv[2]) : 2.0;
  const int huge = strcmp(mode, "huge") == 0;
  uint64_t area[FRAMES * 8 + 16] __attribute__((aligned(64)));
  memset(area, 0, sizeof(area));
  stack_area = area;
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
  if (strcmp(mode, "code") == 0) {
    /* A well-formed SharedFunctionInfo with a short name. */
    sfi_map[1] = (uint64_t)262 << 32;
    memcpy(name + 12, &(int32_t){4}, 4);
    const uint64_t stream_map = map_of(252), code_map = map_of(245), fixed = map_of(175), bytes = map_of(190),
                   weak = map_of(240);
    uint8_t *space = mmap(NULL, 4 * CODE_REGION, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (space == MAP_FAILED) return 1;
    /* Deoptimization data naming this function, one inlined function (a
     * weak reference to it) whose inlining position points at itself. */
    uint64_t *literals = calloc(3, 8), *deopt = calloc(10, 8);
    literals[0] = weak;
    literals[1] = smi(1);
    literals[2] = (uint64_t)sfi | 3;
    uint64_t inlining = byte_array(bytes, 16, 0);
    uint64_t *in = (uint64_t *)(inlining - 1);
    in[2] = (uint64_t)1 << 31 | 20; /* the call is in inlined function 0: no way out */
    deopt[0] = fixed;
    deopt[1] = smi(8);
    deopt[3] = smi(1);
    deopt[4] = (uint64_t)literals | 1;
    deopt[8] = (uint64_t)sfi | 1;
    deopt[9] = inlining;
    /* Positions: one entry in inlined function 0 from offset 0. */
    uint8_t table[32];
    size_t n = vlq(table, 1);
    n += vlq(table + n, (int64_t)1 << 31 | 20);
    uint64_t looping = byte_array(bytes, n, 0);
    memcpy((uint8_t *)(looping - 1) + 16, table, n);
    uint8_t *r[4];
    r[0] = code_region(space, stream_map, code_map, (uint64_t)deopt | 1, looping, CODE_REGION - 64);
    /* A table whose numbers never end; one longer than any read. */
    r[1] = code_region(space + CODE_REGION, stream_map, code_map, (uint64_t)deopt | 1,
                       byte_array(bytes, 4096, 0xff), CODE_REGION - 64);
    uint64_t *too_long = (uint64_t *)(byte_array(bytes, 8, 0) - 1);
    too_long[1] = smi(0x7fffffff);
    r[2] = code_region(space + 2 * CODE_REGION, stream_map, code_map, (uint64_t)deopt | 1, (uint64_t)too_long | 1,
                       CODE_REGION - 64);
    /* A header whose Code does not point back, and a size past any code. */
    r[3] = code_region(space + 3 * CODE_REGION, stream_map, code_map, (uint64_t)deopt | 1, looping, 0xffffffffu);
    ((uint64_t *)(((uint64_t *)(r[3] - 16))[1] - 1))[4] = 0x1001;
    for (int i = 0; i < 8; i++) frame(i)[1] = (uint64_t)(r[i % 4] + 100 + i);
    for (int k = 0; k < 4; k++) memcpy(r[k] + 256, kLoop, sizeof(kLoop));
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int k = 0;; k = (k + 1) % 4) {
      spin_at((uint64_t)frame(0), 20000000, r[k] + 256);
      clock_gettime(CLOCK_MONOTONIC, &t);
      if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds) return 0;
    }
  }
  if (strcmp(mode, "loop") == 0) frame(1)[0] = (uint64_t)frame(0);
  if (strcmp(mode, "fault") == 0) frame(2)[0] = unmapped_above((uint64_t)frame(2));
  if (strcmp(mode, "code") == 0) frame(8)[0] = 0;
  else if (strcmp(mode, "deep") != 0 && strcmp(mode, "loop") != 0 && strcmp(mode, "fault") != 0) frame(3)[0] = 0;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    spin((uint64_t)frame(0), 20000000);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
  return 0;
}
