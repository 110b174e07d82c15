// SPDX-License-Identifier: GPL-2.0
/* Off-CPU time (record --off-cpu), a value source (docs/design.md "Off-CPU
 * time"): a sched_switch program that writes the stack of a thread going off
 * CPU once per key and sums the time until it runs again under that key. Its
 * records are stack records like samples (stack_record.bpf.h), in the
 * sampler's ring and through its pid and cgroup filter. A thread of a
 * recognized interpreter (runtimes.bpf.h: CPython, V8) has its interpreter
 * frames read at each switch by the sampler's own walk: they are part of the
 * key and its record carries them like a sample's. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "events.h"
#include "offcpu.h"
#include "runtimes.bpf.h"

/* The interpreter frames of the thread going off CPU (read_runtime_frames:
 * header and frames), read once per switch into this per-CPU block: hashed
 * into the key, and copied into the record when the key is new. The walk
 * writes frames at masked offsets (below 4 KiB past its start, the V8 walk's
 * offset being unknown to the verifier in its callback), hence the room. */
struct offcpu_rt_block {
	__u8 data[4096 + ARCPROF_RUNTIME_HEADER_SIZE + ARCPROF_RUNTIME_MAX_FRAMES * ARCPROF_RUNTIME_FRAME_SIZE];
	__u32 size; /* 0: none (not a recognized runtime's thread) */
	__u16 flags;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_rt_block);
} offcpu_rt SEC(".maps");

/* emit_record's hook (stack_record.bpf.h): the block read at this switch,
 * after the frames. Returns its size. */
static __always_inline __u32 offcpu_runtime_frames(__u8 *data, __u32 off, struct task_struct *task,
						    __u32 tgid, __u32 tid, __u16 *flags)
{
	__u32 zero = 0;
	struct offcpu_rt_block *b = bpf_map_lookup_elem(&offcpu_rt, &zero);
	if (!b)
		return 0;
	__u64 n = b->size;
	if (n == 0 || n > ARCPROF_RUNTIME_HEADER_SIZE + ARCPROF_RUNTIME_MAX_FRAMES * ARCPROF_RUNTIME_FRAME_SIZE)
		return 0;
	asm volatile("" : "+r"(n));
	if (n == 0 || n > 2047)
		return 0;
	if (bpf_probe_read_kernel(data + (off & 4095), n, b->data))
		return 0;
	*flags |= b->flags;
	return (__u32)n & 2047;
}
#define ARCPROF_RECORD_RUNTIME_FRAMES offcpu_runtime_frames
#include "stack_record.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Per thread: when it went off CPU, under which key, and the time of closed
 * intervals of that key not yet added to offcpu_time. It lives in a slot of
 * offcpu_slots when the thread's slot was free, else in task storage. */
struct offcpu_start {
	__u64 ts;            /* 0: on CPU (or not seen going off) */
	__u64 key;           /* valid when `known` */
	__u64 pending_ns;    /* closed intervals of `key` ... */
	__u64 pending_count; /* ... not yet in offcpu_time */
	__u64 known;
	/* What `key` was hashed from (but the thread): state << 32 | syscall,
	 * then user ip, sp and bp, and the hash of the interpreter frames (0:
	 * none). A switch that finds the same five values has the same key and
	 * skips the hash. */
	__u64 where[5];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_start);
} offcpu_start SEC(".maps");

/* The direct-mapped table of thread states, indexed by tid: an array lookup
 * is inlined by the verifier, where each task-storage lookup is a kernel call
 * (17 ns on this VM, two per switch; replacing both took about 2 points off a
 * CPU-bound ping-pong, docs/performance.md "Off-CPU time"). A thread claims
 * its slot at its first switch out when the slot is free and the thread has
 * no task storage yet; otherwise (another live thread's tid has the same low
 * bits) it keeps using task storage. A slot is given back, its pending time
 * flushed first, at its owner's last switch (TASK_DEAD). 3 MiB. */
#define OFFCPU_SLOTS 65536
struct offcpu_slot {
	__u64 tid; /* owner; 0: free (64 bits for the compare-and-swap) */
	struct offcpu_start s;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OFFCPU_SLOTS);
	__type(key, __u32);
	__type(value, struct offcpu_slot);
} offcpu_slots SEC(".maps");

#define ARCPROF_TASK_DEAD 0x80 /* the kernel's TASK_DEAD: the task's last switch */

/* key -> struct offcpu_value. A key is in the map once its stack record was
 * written, so the loader always has a stack for the time it reads here. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536); /* resized by the loader */
	__type(key, __u64);
	__type(value, struct offcpu_value);
} offcpu_time SEC(".maps");

/* Pending time is moved to offcpu_time once it reaches this, when the thread
 * blocks somewhere else, and at its last switch (TASK_DEAD); a thread still
 * blocked when the recording ends keeps less than this unreported. */
#define OFFCPU_FLUSH_NS 1000000ull

static __always_inline __u64 mix64(__u64 h, __u64 v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static __always_inline void offcpu_flush(struct offcpu_start *st)
{
	if (!st->pending_count)
		return;
	/* Switches are counted here, per flushed batch, not at every switch:
	 * the hot path stays free of the counters map. */
	count_n(ARCPROF_CTR_OFFCPU_SWITCHES, st->pending_count);
	struct offcpu_value *v = bpf_map_lookup_elem(&offcpu_time, &st->key);
	if (v) {
		__sync_fetch_and_add(&v->ns, st->pending_ns);
		__sync_fetch_and_add(&v->count, st->pending_count);
	} else {
		count_n(ARCPROF_CTR_OFFCPU_DROPPED, st->pending_count);
		count_n(ARCPROF_CTR_OFFCPU_DROPPED_NS, st->pending_ns);
	}
	st->pending_ns = 0;
	st->pending_count = 0;
}

/* The state of thread `t` (tid `tid`): its slot, else its task storage. With
 * `create`, a thread seen for the first time gets its slot if it is free, else
 * task storage. NULL when it has none (and `create` is 0) or none could be
 * made. */
static __always_inline struct offcpu_start *thread_state(struct task_struct *t, __u32 tid,
							 int create, struct offcpu_slot **slot_out)
{
	__u32 idx = tid & (OFFCPU_SLOTS - 1);
	struct offcpu_slot *slot = bpf_map_lookup_elem(&offcpu_slots, &idx);
	*slot_out = 0;
	if (slot && slot->tid == tid) {
		*slot_out = slot;
		return &slot->s;
	}
	struct offcpu_start *st = bpf_task_storage_get(&offcpu_start, t, 0, 0);
	if (st || !create)
		return st;
	if (slot && slot->tid == 0 && __sync_val_compare_and_swap(&slot->tid, 0, (__u64)tid) == 0) {
		slot->s.ts = 0;
		slot->s.key = 0;
		slot->s.pending_ns = 0;
		slot->s.pending_count = 0;
		slot->s.known = 0;
		*slot_out = slot;
		return &slot->s;
	}
	return bpf_task_storage_get(&offcpu_start, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* The clock of the switch. The scheduler read sched_clock into the run
 * queue (rq->clock) at the start of this very __schedule(), so the program
 * loads that field instead of calling bpf_ktime_get_ns(): on this machine's
 * VMs a clock read costs 35-50 ns, as much as both task-storage lookups
 * together. The run queue is reached from the current task's fair-class queue
 * (every task's se.cfs_rq is set for its CPU whatever its class, with group
 * scheduling, which distribution kernels build); the `runqueues` per-CPU
 * symbol itself is not resolvable without CONFIG_KALLSYMS_ALL. sched_clock
 * is one clock across CPUs when the TSC is stable (an interval may start on
 * one CPU and end on another); where it is not, CPUs agree within a tick and
 * a negative interval counts as zero. Kernels without group scheduling fall
 * back to bpf_ktime_get_ns(), for every switch alike. Returns 0 when the
 * clock cannot be read: that switch is not timed. */
static __always_inline __u64 switch_clock(struct task_struct *cur)
{
	if (bpf_core_field_exists(struct cfs_rq, rq)) {
		struct cfs_rq *cfs = cur->se.cfs_rq;
		if (!cfs)
			return 0;
		struct rq *rq = cfs->rq;
		return rq ? rq->clock : 0;
	}
	return bpf_ktime_get_ns();
}

/* The user registers of a task, without a kernel call. They sit at a fixed
 * offset from the base of the task's kernel stack (x86's task_pt_regs():
 * THREAD_SIZE less the padding and struct pt_regs, all build constants that
 * BTF does not carry), so the offset is measured once with
 * bpf_task_pt_regs() (a kernel call, 16 ns here) and every later switch adds
 * it to task->stack and reads through bpf_rdonly_cast(), which the verifier
 * turns into a plain move: the loads are then fault-checked plain loads.
 * The pointer is made a number through global memory (a root-only "pointer
 * leak", which arcprof is), one slot per CPU so that CPUs measuring at the
 * same time do not read each other's pointer. Used for the off-CPU key only;
 * a wrong offset would only misplace keys, and an implausible one (above the
 * largest x86 THREAD_SIZE, 32 KiB with KASAN) keeps the kernel call. */
#define PT_REGS_PROBE_SLOTS 1024
__u64 pt_regs_offset;
__u64 pt_regs_probe[PT_REGS_PROBE_SLOTS];

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
/* Set by the loader: the kernel has bpf_rdonly_cast (6.2 and later). Without
 * it the verifier drops the unresolved call and every switch makes the
 * kernel call. */
const volatile __u32 has_rdonly_cast = 0;

static __always_inline struct pt_regs *user_regs_of(struct task_struct *t)
{
	if (!has_rdonly_cast)
		return (struct pt_regs *)bpf_task_pt_regs(t);
	__u64 stack = (__u64)t->stack;
	__u64 off = pt_regs_offset;
	if (!off) {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
		__u64 *probe = &pt_regs_probe[bpf_get_smp_processor_id() & (PT_REGS_PROBE_SLOTS - 1)];
		*(volatile __u64 *)probe = (__u64)regs;
		off = *(volatile __u64 *)probe - stack;
		if (off == 0 || off >= (1u << 16) || (off & 7))
			return regs;
		pt_regs_offset = off;
	}
	return bpf_rdonly_cast((void *)(stack + off), bpf_core_type_id_kernel(struct pt_regs));
}

/* Reads the interpreter frames of `t` (the current task) into this CPU's
 * offcpu_rt block with the sampler's walk (read_runtime_frames) and returns
 * their hash (code, instruction and stamp of each frame; never 0), or 0 when
 * `t` is no recognized runtime's thread.
 *
 * A native thread pays the walk's runtime_procs lookup (a hash miss) at every
 * switch. Caching the miss in the thread's slot (with a generation of
 * runtime_procs that user space bumps at each insert, so that a process
 * recognized later is looked up again) would save it, but not as things
 * stand: on_switch already verifies at 939,723 of the verifier's 1,000,000
 * processed instructions (bpf_prog_info.verified_insns on this kernel,
 * 6.18), and a first version of that cache made the load fail ("BPF
 * program is too large", E2BIG; the verifier ran out inside the CPython
 * walk's frame loop). Any change on this path needs that margin checked;
 * room has to be made first. */
static __always_inline __u64 offcpu_read_runtime(struct task_struct *t, __u32 tgid, __u32 tid)
{
	__u32 zero = 0;
	struct offcpu_rt_block *b = bpf_map_lookup_elem(&offcpu_rt, &zero);
	if (!b)
		return 0;
	__u16 flags = 0;
	__u32 size = read_runtime_frames(b->data, 0, t, tgid, tid, &flags);
	b->flags = flags;
	b->size = size;
	if (size < ARCPROF_RUNTIME_HEADER_SIZE)
		return 0;
	struct runtime_frames_header *h = (struct runtime_frames_header *)b->data;
	__u64 hash = mix64(0x72756e74696d65ull, (__u64)h->runtime << 16 | h->status);
	__u32 count = h->count;
	for (int i = 0; i < ARCPROF_RUNTIME_MAX_FRAMES; i++) {
		if (i >= count)
			break;
		struct runtime_frame *f =
			(struct runtime_frame *)(b->data + ARCPROF_RUNTIME_HEADER_SIZE + i * ARCPROF_RUNTIME_FRAME_SIZE);
		hash = mix64(hash, f->code);
		hash = mix64(hash, f->instr);
		hash = mix64(hash, f->stamp);
	}
	return hash | 1;
}

/* At every context switch: `prev` (the current task) goes off CPU, `next`
 * comes back from wherever it was. Everything stays cheap but for the first
 * time a key is seen: then its stack is written, with the same record and
 * unwinding data as a sample. A key is the thread, its state and the user
 * registers it entered the kernel with (syscall number, instruction, stack
 * and frame pointer): a thread that blocks at the same place again has the
 * same stack. A thread that keeps blocking at one place (a ping-pong, a
 * worker loop) costs two array lookups in offcpu_slots (inlined, no call),
 * one load of the run queue's clock and four loads of its user registers
 * compared with those of its last switch, no kernel call (a thread of a
 * recognized interpreter also has its interpreter frames read and hashed at
 * every switch: see offcpu_read_runtime); its time is summed in its slot (or task
 * storage) and added to offcpu_time once a millisecond has built up, when it
 * blocks elsewhere, or at its last switch. Only targeted threads have a state:
 * a switch between untargeted threads (or the idle task, pid 0) costs two
 * bitmap tests and no lookup. Measured costs: docs/performance.md, "Off-CPU
 * time". */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = 0;
	struct offcpu_start *st;

	/* next comes back: close its interval. Only targeted threads have task
	 * storage, and the bitmap test is cheaper than a missed lookup. */
	struct offcpu_slot *slot;
	if (next->pid && targeted_task(next->tgid, next)) {
		st = thread_state(next, next->pid, 0, &slot);
		if (st && st->ts) {
			now = switch_clock(prev);
			if (now) {
				st->pending_ns += now > st->ts ? now - st->ts : 0;
				st->pending_count += 1;
			}
			st->ts = 0;
			if (st->pending_ns >= OFFCPU_FLUSH_NS)
				offcpu_flush(st);
		}
	}

	/* prev goes off CPU. */
	__u32 tgid = prev->tgid;
	__u32 tid = prev->pid;
	if (tid == 0 || !targeted(tgid))
		return 0;
	/* A preempted task is still runnable (the tracepoint reports it so). */
	__u32 state = preempt ? 0 : prev->__state;
	if (state & ARCPROF_TASK_DEAD) {
		/* Its last switch: add what is pending, give the slot back. */
		st = thread_state(prev, tid, 0, &slot);
		if (st)
			offcpu_flush(st);
		if (slot)
			slot->tid = 0;
		return 0;
	}
	st = thread_state(prev, tid, 1, &slot);
	if (!st)
		return 0;
	if (!now)
		now = switch_clock(prev);
	__s64 nr = -1;
	__u64 ip = 0, sp = 0, bp = 0, rt = 0;
	if (prev->mm) {
		/* Plain loads, no probe-read helper calls. */
		struct pt_regs *regs = user_regs_of(prev);
		nr = regs->orig_ax;
		ip = regs->ip;
		sp = regs->sp;
		bp = regs->bp;
		/* An interpreter's thread: where it blocked in its own code
		 * (alpha's sleep and beta's leave the same native stack). */
		rt = offcpu_read_runtime(prev, tgid, tid);
	} else {
		__u32 zero = 0;
		struct offcpu_rt_block *b = bpf_map_lookup_elem(&offcpu_rt, &zero);
		if (b)
			b->size = 0;
	}
	__u64 state_nr = (__u64)state << 32 | (__u32)nr;
	if (st->known && st->where[0] == state_nr && st->where[1] == ip && st->where[2] == sp &&
	    st->where[3] == bp && st->where[4] == rt) {
		/* Where it blocked last time: same key, nothing to hash. */
		st->ts = now ? now | 1 : 0;
		return 0;
	}
	__u64 key = mix64(0x9e3779b97f4a7c15ull, (__u64)tgid << 32 | tid);
	/* The thread's start: a thread (or process) that reuses the tid of
	 * one that exited never takes its keys, and so its stacks. */
	key = mix64(key, prev->start_time);
	key = mix64(key, state_nr);
	key = mix64(key, ip);
	key = mix64(key, sp);
	key = mix64(key, bp);
	if (rt)
		key = mix64(key, rt);

	if (!st->known || st->key != key) {
		offcpu_flush(st); /* the previous key's time */
		if (!bpf_map_lookup_elem(&offcpu_time, &key)) {
			__u32 cpu = bpf_get_smp_processor_id();
			struct scratch_buf *buf = bpf_map_lookup_elem(&scratch, &cpu);
			if (!buf)
				return 0;
			struct source_info *info =
				(struct source_info *)(buf->data + ARCPROF_SAMPLE_HEADER_SIZE);
			info->key = key;
			info->source = ARCPROF_SOURCE_OFFCPU;
			info->arg = (__s32)nr;
			info->values[0] = state;
			info->values[1] = 0;
			if (emit_record(ctx, buf->data, tgid, tid, cpu, ARCPROF_SAMPLE_SOURCE,
					ARCPROF_SOURCE_INFO_SIZE, 1)) {
				/* No stack, no key: the next switch here tries again. */
				count(ARCPROF_CTR_OFFCPU_LOST_STACKS);
				st->known = 0;
				return 0;
			}
			count(ARCPROF_CTR_OFFCPU_STACKS);
			struct offcpu_value zero = {};
			bpf_map_update_elem(&offcpu_time, &key, &zero, BPF_NOEXIST);
		}
		st->key = key;
		st->known = 1;
	}
	st->where[0] = state_nr;
	st->where[1] = ip;
	st->where[2] = sp;
	st->where[3] = bp;
	st->where[4] = rt;
	/* 0 means "on CPU" (or not timed), so a start is never 0. */
	st->ts = now ? now | 1 : 0;
	return 0;
}
