/* V8 (Node) at sample time (included by runtimes.bpf.h; docs/node.md). V8
 * keeps a frame pointer in every frame it builds, and a JavaScript frame
 * (interpreted, baseline or optimized) holds its JSFunction and its Context
 * at fixed slots below it (the v8dbg_off_fp_* constants of the binary). The
 * walk follows the frame-pointer chain from the sampled registers, reads each
 * frame's slots and, for a JavaScript frame, the function's
 * SharedFunctionInfo and a stamp of it (its name-or-scope-info and script
 * words); user space names it (runtimes/node) and puts it in place of the
 * native frame with the same pc. Every read may fail and every pointer may
 * lie (a hostile process): at most ARCPROF_V8_MAX_WALK frames, a chain must
 * go up the stack, at most ARCPROF_RUNTIME_MAX_FRAMES frames are written. */
#include "runtimes.bpf.h"

struct v8_walk {
	__u8 *data;   /* the record; frames at data + off + header */
	__u8 *buf;    /* per-CPU scratch for one frame's slots */
	__u64 fp, pc;
	__u32 off;
	__u32 n;
	__u32 status;
	__u32 ended;
	__u32 returned; /* pc is a return address (every frame but the first) */
	__u16 o_func, o_ctx, o_bo, o_shared, o_name, o_script;
};

static long v8_step(__u64 i, void *ctx)
{
	struct v8_walk *w = ctx;
	__u64 fp = w->fp;
	if (!fp) {
		w->ended = 1;
		return 1;
	}
	if ((fp & 7) || fp < ARCPROF_V8_FRAME_BELOW) {
		w->status = ARCPROF_RUNTIME_BAD_CHAIN;
		w->ended = 1;
		return 1;
	}
	__u8 *b = w->buf;
	if (!b)
		return 1;
	/* From fp - ARCPROF_V8_FRAME_BELOW to the return address. */
	if (bpf_probe_read_user(b, ARCPROF_V8_FRAME_BELOW + 16, (void *)(fp - ARCPROF_V8_FRAME_BELOW))) {
		w->status = ARCPROF_RUNTIME_READ_FAULT;
		w->ended = 1;
		return 1;
	}
	__u64 func = *(__u64 *)(b + ((ARCPROF_V8_FRAME_BELOW - w->o_func) & 63));
	__u64 context = *(__u64 *)(b + ((ARCPROF_V8_FRAME_BELOW - w->o_ctx) & 63));
	__u64 bo = *(__u64 *)(b + ((ARCPROF_V8_FRAME_BELOW - w->o_bo) & 63));
	__u64 saved = *(__u64 *)(b + ARCPROF_V8_FRAME_BELOW);
	__u64 ret = *(__u64 *)(b + ARCPROF_V8_FRAME_BELOW + 8);
	/* A JavaScript frame: tagged heap pointers in both slots (a typed
	 * frame has a small even marker where the context would be). */
	if ((func & 3) == 1 && (context & 3) == 1 && w->n < ARCPROF_RUNTIME_MAX_FRAMES) {
		__u64 shared = read_u64(func - 1 + w->o_shared);
		if ((shared & 3) == 1) {
			__u64 name = read_u64(shared - 1 + w->o_name);
			__u64 script = read_u64(shared - 1 + w->o_script);
			__u32 at = (w->off + ARCPROF_RUNTIME_HEADER_SIZE +
				    (w->n & (ARCPROF_RUNTIME_MAX_FRAMES - 1)) * ARCPROF_RUNTIME_FRAME_SIZE) & 4095;
			__u8 *data = w->data;
			if (!data)
				return 1;
			struct runtime_frame *f = (struct runtime_frame *)(data + at);
			__u64 instr = w->pc & ARCPROF_V8_PC_MASK;
			if (w->returned)
				instr |= ARCPROF_V8_RETURN_BIT;
			/* A Smi (upper 32 bits) in the bytecode-offset slot. */
			if ((bo & 0xffffffffull) == 0 && (bo >> 32) < 0xfffe)
				instr |= ((bo >> 32) + 1) << 48;
			f->code = shared;
			f->instr = instr;
			f->stamp = name ^ (script << 1 | script >> 63);
			w->n++;
		}
	}
	if (saved == 0) {
		w->fp = 0;
		w->ended = 1;
		return 1;
	}
	if (saved <= fp) {
		w->status = ARCPROF_RUNTIME_BAD_CHAIN;
		w->ended = 1;
		return 1;
	}
	w->fp = saved;
	w->pc = ret;
	w->returned = 1;
	return 0;
}

/* A thread stopped in a library built without frame pointers (glibc: a
 * system call, off CPU or sampled in the kernel) has no frame pointer in rbp,
 * which such code uses as a plain register; the first function of it that
 * did so saved the caller's, a real one, on the stack. The search: the first
 * word of the ARCPROF_V8_SCAN_BYTES above sp that points up the stack (less
 * than a MiB) at a word that again points further up, with a return address
 * above it: the start of a frame-pointer chain. */
struct v8_scan {
	__u64 *words; /* the bytes read at sp */
	__u64 sp;
	__u64 fp;     /* found: 0 none */
};

static long v8_scan_step(__u64 i, void *ctx)
{
	struct v8_scan *s = ctx;
	__u64 *words = s->words;
	if (!words)
		return 1;
	__u64 at = s->sp + i * 8;
	__u64 v = words[i & (ARCPROF_V8_SCAN_BYTES / 8 - 1)];
	if ((v & 7) || v <= at || v - at >= (1u << 20))
		return 0;
	__u64 link[2] = {};
	if (bpf_probe_read_user(link, sizeof(link), (void *)v))
		return 0;
	if (link[0] <= v || link[0] - v >= (1u << 20) || (link[0] & 7) || link[1] < 4096)
		return 0;
	s->fp = v;
	return 1;
}

static __always_inline __u64 v8_scan_fp(__u8 *buf, __u64 sp)
{
	if (!buf || (sp & 7) || bpf_probe_read_user(buf, ARCPROF_V8_SCAN_BYTES, (void *)sp))
		return 0;
	struct v8_scan s = {(__u64 *)buf, sp, 0};
	bpf_loop(ARCPROF_V8_SCAN_BYTES / 8, v8_scan_step, &s, 0);
	return s.fp;
}

static __always_inline __u32 read_v8_frames(__u8 *data, __u32 off, struct task_struct *task,
					    const struct runtime_proc *rp, __u16 *flags)
{
	__u32 zero = 0;
	struct rt_scratch_buf *sb = bpf_map_lookup_elem(&rt_scratch, &zero);
	if (!sb)
		return 0;
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct runtime_frames_header *h = (struct runtime_frames_header *)(data + (off & 4095));
	h->runtime = ARCPROF_RUNTIME_V8;
	h->count = 0;
	h->reserved = 0;
	h->status = ARCPROF_RUNTIME_COMPLETE;
	h->thread = 0;
	*flags |= ARCPROF_SAMPLE_HAS_RUNTIME;

	struct v8_walk w = {};
	w.data = data;
	w.buf = sb->data;
	w.off = off;
	w.fp = BPF_CORE_READ(regs, bp);
	w.pc = BPF_CORE_READ(regs, ip);
	__u64 sp = BPF_CORE_READ(regs, sp);
	if (w.fp <= sp || w.fp - sp >= (1u << 20)) {
		/* No frame pointer in rbp: a saved one from the stack. The
		 * frame it starts is a caller's, so no pc goes with it. */
		w.fp = v8_scan_fp(sb->data, sp);
		w.pc = 0;
	}
	w.status = ARCPROF_RUNTIME_COMPLETE;
	w.o_func = rp->off[ARCPROF_V8_FP_FUNCTION];
	w.o_ctx = rp->off[ARCPROF_V8_FP_CONTEXT];
	w.o_bo = rp->off[ARCPROF_V8_FP_BYTECODE_OFFSET];
	w.o_shared = rp->off[ARCPROF_V8_FUNCTION_SHARED];
	w.o_name = rp->off[ARCPROF_V8_SFI_NAME];
	w.o_script = rp->off[ARCPROF_V8_SFI_SCRIPT];
	bpf_loop(ARCPROF_V8_MAX_WALK, v8_step, &w, 0);
	if (!w.ended)
		w.status = ARCPROF_RUNTIME_MAX_DEPTH;
	__u32 n = w.n;
	if (n > ARCPROF_RUNTIME_MAX_FRAMES)
		n = ARCPROF_RUNTIME_MAX_FRAMES;
	h->count = n;
	h->status = w.status;
	sb->size = ARCPROF_RUNTIME_HEADER_SIZE + n * ARCPROF_RUNTIME_FRAME_SIZE;
	return *(volatile __u32 *)&sb->size & 2047;
}
