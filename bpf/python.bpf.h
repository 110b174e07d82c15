/* CPython 2.7 and 3.6+ at sample time (included by sample.bpf.c; docs/python.md).
 * For a process user space recognized as CPython (runtime_procs), the sampled
 * thread's interpreter frames are read from its thread state: thread state ->
 * current frame -> previous ..., at most ARCPROF_RUNTIME_MAX_FRAMES, one read
 * of ARCPROF_PY_FRAME_READ bytes per frame and one of the code object's
 * filename and names (the stamp). Every read may fail (a corrupt or hostile
 * process): the walk then stops with a status, it never loops longer than
 * its bound. */
#include "runtimes.bpf.h"

/* Thread state by (tgid << 32 | tid), found by a search of the interpreter's
 * thread list at the thread's first sample and checked at every later one
 * (its native_thread_id must still be the thread's). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} runtime_threads SEC(".maps");

/* The thread's id in its own pid namespace: what CPython stores as
 * native_thread_id (gettid()). */
static __always_inline __u64 ns_tid_of(struct task_struct *task)
{
	struct pid *p = BPF_CORE_READ(task, thread_pid);
	unsigned int level = BPF_CORE_READ(p, level);
	int nr = 0;
	bpf_core_read(&nr, sizeof(nr), &p->numbers[level & 31].nr);
	return (__u64)(__u32)nr;
}

/* What PyThreadState.native_thread_id (3.11+) or .thread_id (before:
 * pthread_self(), the thread's fsbase) holds for the sampled thread. */
static __always_inline __u64 py_thread_id(const struct runtime_proc *rp, struct task_struct *task)
{
	if (rp->version < ARCPROF_PY_FRAME_OBJECTS)
		return BPF_CORE_READ(task, thread.fsbase);
	return ns_tid_of(task);
}

static __always_inline __u64 py_thread_state(const struct runtime_proc *rp, __u64 key, __u64 ns_tid)
{
	__u16 o_tid = rp->off[ARCPROF_PY_TSTATE_NATIVE_TID];
	__u64 *cached = bpf_map_lookup_elem(&runtime_threads, &key);
	if (cached && *cached && read_u64(*cached + o_tid) == ns_tid)
		return *cached;
	__u64 interp = read_u64(rp->root + rp->off[ARCPROF_PY_RUNTIME_INTERPRETERS_HEAD]);
	if (!interp)
		return 0;
	__u64 ts = read_u64(interp + rp->off[ARCPROF_PY_INTERP_THREADS_HEAD]);
	__u16 o_next = rp->off[ARCPROF_PY_TSTATE_NEXT];
	for (int i = 0; i < ARCPROF_PY_MAX_THREADS && ts; i++) {
		if (read_u64(ts + o_tid) == ns_tid) {
			bpf_map_update_elem(&runtime_threads, &key, &ts, BPF_ANY);
			return ts;
		}
		ts = read_u64(ts + o_next);
	}
	return 0;
}

/* Writes CPython's block at data + off (a header and the frames); returns
 * its size, 0 when there is none. */
static __always_inline __u32 read_python_frames(__u8 *data, __u32 off, struct task_struct *task,
						 __u32 tgid, __u32 tid, const struct runtime_proc *rp,
						 __u16 *flags)
{
	__u32 zero = 0;
	struct rt_scratch_buf *sb = bpf_map_lookup_elem(&rt_scratch, &zero);
	if (!sb)
		return 0;
	struct runtime_frames_header *h = (struct runtime_frames_header *)(data + (off & 4095));
	h->runtime = ARCPROF_RUNTIME_PYTHON;
	h->count = 0;
	h->reserved = 0;
	h->status = ARCPROF_RUNTIME_COMPLETE;
	*flags |= ARCPROF_SAMPLE_HAS_RUNTIME;

	__u64 key = (__u64)tgid << 32 | tid;
	__u64 ts = py_thread_state(rp, key, py_thread_id(rp, task));
	h->thread = ts;
	if (!ts) {
		h->status = ARCPROF_RUNTIME_NO_THREAD;
		sb->size = ARCPROF_RUNTIME_HEADER_SIZE;
		return *(volatile __u32 *)&sb->size & 2047;
	}
	__u64 frame = read_u64(ts + rp->off[ARCPROF_PY_TSTATE_FRAME]);
	if (frame && rp->off[ARCPROF_PY_CFRAME_FRAME] != ARCPROF_PY_NO_OFFSET)
		frame = read_u64(frame + rp->off[ARCPROF_PY_CFRAME_FRAME]);

	__u16 o_code = rp->off[ARCPROF_PY_FRAME_CODE];
	__u16 o_prev = rp->off[ARCPROF_PY_FRAME_PREVIOUS];
	__u16 o_instr = rp->off[ARCPROF_PY_FRAME_INSTR];
	__u16 o_owner = rp->off[ARCPROF_PY_FRAME_OWNER];
	__u16 o_entry = rp->off[ARCPROF_PY_FRAME_ENTRY];
	__u16 o_file = rp->off[ARCPROF_PY_CODE_FILENAME];
	/* The name is the second or third word of the 24 bytes read at co_filename. */
	__u32 name_word = ((__u32)(rp->off[ARCPROF_PY_CODE_NAME] - o_file) >> 3) & 3;
	int frame_objects = rp->version < ARCPROF_PY_FRAME_OBJECTS;
	/* One entry per frame, so that the verifier sees as many states as
	 * iterations (the entry count is the loop count). */
	__u32 n = 0;
	for (int i = 0; i < ARCPROF_RUNTIME_MAX_FRAMES; i++) {
		if (!frame)
			break;
		if (bpf_probe_read_user(sb->data, ARCPROF_PY_FRAME_READ, (void *)frame)) {
			h->status = ARCPROF_RUNTIME_READ_FAULT;
			break;
		}
		__u64 code = field_u64(sb->data, o_code);
		__u64 prev = field_u64(sb->data, o_prev);
		__u8 owner = sb->data[o_owner & 127];
		__u8 entry = o_entry != ARCPROF_PY_NO_OFFSET ? sb->data[o_entry & 127] : 0;
		struct runtime_frame *f =
			(struct runtime_frame *)(data + ((off + ARCPROF_RUNTIME_HEADER_SIZE +
							  (i & 63) * ARCPROF_RUNTIME_FRAME_SIZE) & 4095));
		if (!frame_objects && o_entry == ARCPROF_PY_NO_OFFSET && owner == ARCPROF_PY_OWNED_BY_CSTACK) {
			/* 3.12+: the shim an activation of the interpreter pushes
			 * below the frames it runs: a marker. */
			f->code = 0;
			f->instr = 0;
			f->stamp = 0;
		} else {
			__u64 *names = (__u64 *)(sb->data + ARCPROF_PY_FRAME_READ);
			names[0] = 0;
			names[1] = 0;
			names[2] = 0;
			names[3] = 0;
			bpf_probe_read_user(names, 24, (void *)(code + o_file));
			__u64 name = names[name_word];
			f->code = code;
			if (frame_objects) {
				/* Before 3.11 each frame has its own activation;
				 * f_lasti is an int. */
				f->instr = (__u64)(__u32)field_u64(sb->data, o_instr) << 1 | ARCPROF_RUNTIME_ENTRY_BIT;
			} else {
				/* 3.11: the first frame its activation ran
				 * (is_entry), in the low bit of the 2-byte aligned
				 * instruction. */
				f->instr = field_u64(sb->data, o_instr) | (entry ? ARCPROF_RUNTIME_ENTRY_BIT : 0);
			}
			f->stamp = names[0] ^ (name << 1 | name >> 63);
		}
		n = i + 1;
		frame = prev;
	}
	if (frame && h->status == ARCPROF_RUNTIME_COMPLETE)
		h->status = ARCPROF_RUNTIME_MAX_DEPTH;
	h->count = n;
	/* Through memory: the size comes back as a number the verifier does not
	 * track by value, so the stack copy after it is verified once, not once
	 * per possible frame count. */
	sb->size = ARCPROF_RUNTIME_HEADER_SIZE + n * ARCPROF_RUNTIME_FRAME_SIZE;
	return *(volatile __u32 *)&sb->size & 2047;
}
