/* What the sampler reads for interpreted runtimes (runtimes/, docs/python.md):
 * the per-process description user space writes into the runtime_procs map
 * when it recognizes a process, and the block a sample carries when the
 * sampled thread runs such a runtime (ARCPROF_SAMPLE_HAS_RUNTIME). Fixed-width
 * types only; sizes are checked on both sides. */
#ifndef ARCPROF_BPF_RUNTIMES_H
#define ARCPROF_BPF_RUNTIMES_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

/* runtime_proc.runtime and runtime_frames_header.runtime */
#define ARCPROF_RUNTIME_NONE 0
#define ARCPROF_RUNTIME_PYTHON 1
#define ARCPROF_RUNTIME_V8 2

/* Interpreter frames one sample carries at most (markers included). */
#define ARCPROF_RUNTIME_MAX_FRAMES 64

/* runtime_frames_header.status: how the walk ended. */
#define ARCPROF_RUNTIME_COMPLETE 0   /* reached the thread's first frame */
#define ARCPROF_RUNTIME_MAX_DEPTH 1  /* more frames than ARCPROF_RUNTIME_MAX_FRAMES */
#define ARCPROF_RUNTIME_NO_THREAD 2  /* no thread state for this thread (not found) */
#define ARCPROF_RUNTIME_READ_FAULT 3 /* a frame could not be read */
#define ARCPROF_RUNTIME_BAD_CHAIN 4  /* a frame pointer that does not go up the stack (V8) */

/* CPython offsets (runtime_proc.off[]), per version (runtimes/python). */
enum arcprof_py_off {
	ARCPROF_PY_RUNTIME_INTERPRETERS_HEAD = 0, /* _PyRuntimeState.interpreters.head; 0 (root: interp_head) in 2.7, 3.6 */
	ARCPROF_PY_INTERP_THREADS_HEAD,           /* PyInterpreterState.threads.head */
	ARCPROF_PY_TSTATE_NEXT,                   /* PyThreadState.next */
	ARCPROF_PY_TSTATE_NATIVE_TID,             /* PyThreadState.native_thread_id */
	ARCPROF_PY_TSTATE_FRAME,                  /* .cframe (3.11, 3.12) or .current_frame (3.13) */
	ARCPROF_PY_CFRAME_FRAME,                  /* _PyCFrame.current_frame; 0xffff: no cframe */
	ARCPROF_PY_FRAME_CODE,                    /* _PyInterpreterFrame.f_code / f_executable */
	ARCPROF_PY_FRAME_PREVIOUS,
	ARCPROF_PY_FRAME_INSTR,                   /* .prev_instr / .instr_ptr */
	ARCPROF_PY_FRAME_OWNER,                   /* .owner (3.12+: 3 is a C stack shim) */
	ARCPROF_PY_FRAME_ENTRY,                   /* .is_entry (3.11); 0xffff: none */
	ARCPROF_PY_CODE_FILENAME,                 /* co_filename */
	ARCPROF_PY_CODE_NAME,                     /* co_qualname (3.11+), co_name: 8 or 16 bytes after co_filename */
	ARCPROF_PY_OFF_COUNT = 16,
};
/* Before 3.11 (runtime_proc.version < ARCPROF_PY_FRAME_OBJECTS) a frame is a
 * PyFrameObject and the fields above stand for: TSTATE_NATIVE_TID
 * PyThreadState.thread_id (pthread_self(): the thread's fsbase),
 * TSTATE_FRAME .frame, FRAME_CODE f_code, FRAME_PREVIOUS f_back, FRAME_INSTR
 * f_lasti (an int); every frame is run by an activation of its own. */
#define ARCPROF_PY_FRAME_OBJECTS 0x30b
#define ARCPROF_PY_NO_OFFSET 0xffff
#define ARCPROF_PY_FRAME_READ 128     /* bytes of a frame read at once: every field above lies below (2.7, 3.6: f_lasti at 120) */
#define ARCPROF_PY_OWNED_BY_CSTACK 3  /* 3.12+: an entry shim, not a Python frame */
#define ARCPROF_PY_MAX_THREADS 128    /* thread states searched for a thread not seen yet */

/* V8 offsets (runtime_proc.off[]), from the v8dbg_* constants of the node
 * binary (runtimes/node). Frame slots are given as bytes below the frame
 * pointer. */
enum arcprof_v8_off {
	ARCPROF_V8_FP_FUNCTION = 0,    /* -v8dbg_off_fp_function: the JSFunction */
	ARCPROF_V8_FP_CONTEXT,         /* -v8dbg_off_fp_context: a Context, or a frame-type marker */
	ARCPROF_V8_FP_BYTECODE_OFFSET, /* -v8dbg_off_fp_bytecode_offset (interpreted frames) */
	ARCPROF_V8_FUNCTION_SHARED,    /* JSFunction.shared, from the tagged pointer's untagged base */
	ARCPROF_V8_SFI_NAME,           /* SharedFunctionInfo.name_or_scope_info */
	ARCPROF_V8_SFI_SCRIPT,         /* SharedFunctionInfo.script_or_debug_info */
	ARCPROF_V8_OFF_COUNT,
};
#define ARCPROF_V8_FRAME_BELOW 48 /* bytes of a frame read below its frame pointer (every slot above lies within) */
#define ARCPROF_V8_MAX_WALK 160   /* frame pointers followed at most (native frames included) */
#define ARCPROF_V8_SCAN_BYTES 512 /* stack searched for a saved frame pointer when rbp holds none (v8.bpf.h) */
/* runtime_frame.instr of a V8 frame: the frame's pc in the low 47 bits (a
 * user address), bit 47 set when that pc is a return address (every frame
 * but the sampled one), and for a frame whose bytecode-offset slot holds a
 * small Smi, that Smi + 1 in the high 16 bits (0: none). */
#define ARCPROF_V8_PC_MASK 0x7fffffffffffull
#define ARCPROF_V8_RETURN_BIT (1ull << 47)

/* runtime_procs value, by tgid. */
struct runtime_proc {
	__u32 runtime;  /* ARCPROF_RUNTIME_* */
	__u32 version;  /* e.g. 0x030b for 3.11, 0x0207 for 2.7 */
	__u64 root;     /* the runtime's root object (CPython: &_PyRuntime; &interp_head in 2.7, 3.6) */
	__u16 off[ARCPROF_PY_OFF_COUNT];
};
#define ARCPROF_RUNTIME_PROC_SIZE 48

/* Follows the frames when ARCPROF_SAMPLE_HAS_RUNTIME is set (before the user
 * registers), then `count` runtime_frame entries, leaf first. */
struct runtime_frames_header {
	__u16 runtime;
	__u16 count;
	__u16 status;
	__u16 reserved;
	__u64 thread;  /* the thread state read */
};
#define ARCPROF_RUNTIME_HEADER_SIZE 16

/* One interpreter frame: CPython's code object, the instruction pointer of
 * the frame and a stamp of the code object (co_filename ^ co_qualname, or
 * co_name before 3.11, read at sample time: user space names the code object
 * only when it still holds them). The frames one native activation of the
 * interpreter (_PyEval_EvalFrameDefault) runs end after a frame whose instr
 * has ARCPROF_RUNTIME_ENTRY_BIT (3.11's is_entry; every frame before 3.11),
 * or at a marker, code == 0 (3.12+: the activation's shim frame). Before
 * 3.11 instr is f_lasti shifted left by one. */
#define ARCPROF_RUNTIME_ENTRY_BIT 1ull
struct runtime_frame {
	__u64 code;
	__u64 instr;
	__u64 stamp;
};
#define ARCPROF_RUNTIME_FRAME_SIZE 24

#ifdef __BPF__
_Static_assert(sizeof(struct runtime_proc) == ARCPROF_RUNTIME_PROC_SIZE, "runtime_proc");
_Static_assert(sizeof(struct runtime_frames_header) == ARCPROF_RUNTIME_HEADER_SIZE, "runtime header");
_Static_assert(sizeof(struct runtime_frame) == ARCPROF_RUNTIME_FRAME_SIZE, "runtime_frame");
#elif defined(__cplusplus)
static_assert(sizeof(struct runtime_proc) == ARCPROF_RUNTIME_PROC_SIZE, "runtime_proc");
static_assert(sizeof(struct runtime_frames_header) == ARCPROF_RUNTIME_HEADER_SIZE, "runtime header");
static_assert(sizeof(struct runtime_frame) == ARCPROF_RUNTIME_FRAME_SIZE, "runtime_frame");
#endif

#endif /* ARCPROF_BPF_RUNTIMES_H */
