// SPDX-License-Identifier: GPL-2.0
/* The sampler: a perf_event program attached to one sampling event per online
 * CPU. Each sample becomes one variable-size ring buffer record holding the
 * kernel and the user stack (frame-pointer walks by bpf_get_stack) and, for
 * dwarf/hybrid unwinding, the user registers and a copy of the user stack.
 * With --off-cpu, a sched_switch program writes the same records for threads
 * going off CPU and sums their off-CPU time in BPF (see on_switch). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "events.h"
#include "python.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader between open and load. */
const volatile __u32 filter_pids = 0; /* 1: only processes in target_pids */
const volatile __u32 self_pid = 0;    /* arcprof itself, never sampled */
const volatile __u32 unwind_mode = ARCPROF_UNWIND_FP;
const volatile __u32 stack_copy_bytes = 64 * 1024; /* dwarf/hybrid; capped to ARCPROF_MAX_STACK_COPY */
const volatile __u32 copy_deep_stacks = 0; /* 1: a deeper stack is copied to its base (copy_user_state) */
const volatile __u32 filter_cgroups = 0; /* 1: only tasks in (or below) a cgroup of target_cgroups */

/* The sample ring in use, in slot 0 of sample_rings. It starts small and the
 * loader replaces it by a larger one when a drain finds it filling (up to
 * ring_max_bytes): its pages are mapped into the loader (twice) from the
 * start, so a short command must not pay for the ring a busy machine needs.
 * `samples` is the first ring (sized by the loader). */
struct sample_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
};

struct sample_ring samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct sample_ring);
} sample_rings SEC(".maps") = {
	.values = { [0] = &samples },
};

/* Below this ring size a record that finds the ring more than a quarter full
 * wakes the loader, which drains at once and grows the ring; at it, records
 * never wake it (the drain timer alone: a wakeup per sample cost about 3
 * points of slowdown on the profiled workload). Set by the loader through
 * the mmapped .bss, and lowered when a larger ring cannot be had. */
__u64 ring_max_bytes;
/* Counts those wakeups: the loader looks at it between records, so a ring
 * that fills while a long drain runs grows at once (no atomics: any change
 * is the signal). */
__u64 ring_wakeups;

/* The followed processes (with filter_pids), for the loader to list and sweep;
 * the programs test target_bits instead. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);  /* tgid */
	__type(value, __u8);
} target_pids SEC(".maps");

/* The same set as one bit per tgid, for every pid the kernel can hand out
 * (ARCPROF_PID_LIMIT): the test at every sample and context switch is one
 * load from global data instead of a hash lookup, so a switch between
 * untargeted threads costs a few nanoseconds. Bits are set and cleared with
 * atomic operations, here and by the loader through the mmapped .bss, next to
 * its target_pids updates. 512 KiB. */
__u64 target_bits[ARCPROF_PID_LIMIT / 64];

/* The chosen cgroups (record/continuous --container, --cgroup, --service;
 * cgroup v2 ids). A task is targeted when the ancestor of its cgroup at one
 * of the levels in cgroup_levels (the depths of the chosen cgroups, 0-ended,
 * written by the loader through the mmapped .bss) is in the map: one helper
 * call and one lookup per distinct depth, and a process that joins a chosen
 * cgroup, or a child it starts, is sampled from then on. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ARCPROF_MAX_CGROUPS);
	__type(key, __u64);  /* cgroup id */
	__type(value, __u8);
} target_cgroups SEC(".maps");

__u32 cgroup_levels[ARCPROF_CGROUP_LEVELS];

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ARCPROF_CTR_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* One record is built here before it is copied to the ring buffer: header,
 * frames, user registers, then the user stack copy. The regions after the
 * frames start at variable offsets, so offsets are masked to keep every access
 * provably inside the buffer: frames and registers end below 4 KiB, the stack
 * copy adds at most ARCPROF_MAX_STACK_COPY, and one page of slack covers the
 * last chunk. Per-CPU values are limited to 32 KiB, so this is an ARRAY
 * indexed by CPU (max_entries set by the loader). */
#define SCRATCH_SIZE (4096 + ARCPROF_MAX_STACK_COPY + 4096)
struct scratch_buf {
	__u8 data[SCRATCH_SIZE];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch_buf);
} scratch SEC(".maps");

/* Side-band perf records (mmap2/comm/task) are read through this map by the
 * loader (perf_buffer__new_raw); no program writes to it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} sideband SEC(".maps");

static __always_inline void count_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		*v += n;
}

static __always_inline void count(__u32 idx)
{
	count_n(idx, 1);
}

/* Copies the user registers and up to `max` bytes of the user stack from sp
 * upwards, page by page: bpf_probe_read_user fails whole at the first page it
 * cannot read, so a single large read would lose everything. Returns the
 * number of bytes written at data + off. */
static __always_inline __u32 copy_user_state(__u8 *data, __u32 off, struct task_struct *task,
					     __u32 max, __u16 *flags)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct user_regs_block *ur = (struct user_regs_block *)(data + (off & 4095));

	ur->regs[0] = BPF_CORE_READ(regs, ax);
	ur->regs[1] = BPF_CORE_READ(regs, dx);
	ur->regs[2] = BPF_CORE_READ(regs, cx);
	ur->regs[3] = BPF_CORE_READ(regs, bx);
	ur->regs[4] = BPF_CORE_READ(regs, si);
	ur->regs[5] = BPF_CORE_READ(regs, di);
	ur->regs[6] = BPF_CORE_READ(regs, bp);
	ur->regs[7] = BPF_CORE_READ(regs, sp);
	ur->regs[8] = BPF_CORE_READ(regs, r8);
	ur->regs[9] = BPF_CORE_READ(regs, r9);
	ur->regs[10] = BPF_CORE_READ(regs, r10);
	ur->regs[11] = BPF_CORE_READ(regs, r11);
	ur->regs[12] = BPF_CORE_READ(regs, r12);
	ur->regs[13] = BPF_CORE_READ(regs, r13);
	ur->regs[14] = BPF_CORE_READ(regs, r14);
	ur->regs[15] = BPF_CORE_READ(regs, r15);
	ur->regs[16] = BPF_CORE_READ(regs, ip);
	ur->reserved = 0;

	__u64 sp = ur->regs[7];
	__u64 stack_off = (off + ARCPROF_USER_REGS_SIZE) & 4095;
	/* 64-bit arithmetic: 32-bit values get zero-extended into copies and the
	 * verifier then sees the helper's size argument unchecked. */
	__u64 copied = 0;
	__u64 limit = max > ARCPROF_MAX_STACK_COPY ? ARCPROF_MAX_STACK_COPY : max;
	/* Where the stack ends: a main thread's at mm->start_stack; another
	 * thread's, when glibc allocated it, right below its thread pointer
	 * (glibc puts the thread descriptor and static TLS at the top of the
	 * stack block, and fsbase points at the descriptor). A stack deeper than
	 * `max` that fits ARCPROF_MAX_STACK_COPY is copied down to there, so
	 * that deep recursions still unwind to thread start. Only deep stacks
	 * copy more. A base further away is no base: a stack deeper than any
	 * copy, or a thread pointer elsewhere (a program's own stacks, a Go
	 * goroutine's); those keep `max`, and the copy ends there or at the
	 * first unreadable page, as always. */
	if (copy_deep_stacks) {
		__u64 base = BPF_CORE_READ(task, pid) == BPF_CORE_READ(task, tgid)
				     ? BPF_CORE_READ(task, mm, start_stack)
				     : BPF_CORE_READ(task, thread.fsbase);
		if (sp < base && base - sp > limit && base - sp <= ARCPROF_MAX_STACK_COPY)
			limit = base - sp;
	}
	for (int i = 0; i < ARCPROF_MAX_STACK_COPY / 4096 + 1; i++) {
		if (copied >= limit)
			break;
		__u64 addr = sp + copied;
		__u64 chunk = 4096 - (addr & 4095);
		__u64 remaining = limit - copied;
		if (chunk > remaining)
			chunk = remaining;
		/* Keep clang from passing the unbounded `remaining` to the helper:
		 * the verifier must see this very register checked. */
		asm volatile("" : "+r"(chunk));
		if (chunk == 0 || chunk > 4096)
			break;
		__u64 at = stack_off + (copied & (ARCPROF_MAX_STACK_COPY - 1));
		if (at > SCRATCH_SIZE - 4096)
			break;
		if (bpf_probe_read_user(data + at, chunk, (void *)addr)) {
			*flags |= ARCPROF_SAMPLE_STACK_FAULT;
			count(ARCPROF_CTR_STACK_FAULT);
			break;
		}
		copied += chunk;
	}
	ur->stack_len = (__u32)copied;
	return ARCPROF_USER_REGS_SIZE + (__u32)copied;
}

/* Builds one record in the per-CPU scratch buffer and writes it to the ring:
 * header, `extra` bytes the caller already put after the header, the kernel
 * stack (when `kernel`), the user stack, then the user registers and stack
 * copy. The same path for samples and off-CPU stacks, so that both unwind
 * alike. Returns 0 when the record was written. */
static __always_inline int emit_record(void *ctx, __u8 *data, __u32 tgid, __u32 tid, __u32 cpu,
				       __u16 flags, __u32 extra, int kernel)
{
	struct sample_event *e = (struct sample_event *)data;
	__u32 frames_off = ARCPROF_SAMPLE_HEADER_SIZE + (extra & 63);
	__u64 *ips = (__u64 *)(data + frames_off);
	e->timestamp_ns = bpf_ktime_get_ns();
	e->pid = tgid;
	e->tid = tid;
	e->cpu = cpu;
	bpf_get_current_comm(e->comm, sizeof(e->comm));

	long kbytes = 0;
	if (kernel) {
		kbytes = bpf_get_stack(ctx, ips, ARCPROF_MAX_STACK * sizeof(__u64), 0);
		if (kbytes < 0) {
			flags |= ARCPROF_SAMPLE_KSTACK_ERR;
			count(ARCPROF_CTR_KSTACK_ERR);
			kbytes = 0;
		}
	}
	__u32 kn = (__u32)kbytes / sizeof(__u64);
	if (kn > ARCPROF_MAX_STACK)
		kn = ARCPROF_MAX_STACK;

	struct task_struct *task = bpf_get_current_task_btf();
	/* The idle task and kernel threads have no user stack. */
	int has_user = tgid != 0 && BPF_CORE_READ(task, mm) != 0;
	long ubytes = 0;
	if (has_user && unwind_mode != ARCPROF_UNWIND_DWARF) {
		ubytes = bpf_get_stack(ctx, &ips[kn & ARCPROF_MAX_STACK],
				       ARCPROF_MAX_STACK * sizeof(__u64), BPF_F_USER_STACK);
		if (ubytes < 0) {
			flags |= ARCPROF_SAMPLE_USTACK_ERR;
			count(ARCPROF_CTR_USTACK_ERR);
			ubytes = 0;
		}
	}
	__u32 un = (__u32)ubytes / sizeof(__u64);
	if (un > ARCPROF_MAX_STACK)
		un = ARCPROF_MAX_STACK;
	e->kstack_len = kn;
	e->ustack_len = un;

	__u32 size = frames_off + (kn + un) * sizeof(__u64);
	/* Interpreter frames (runtimes/): before the registers, so that every
	 * offset up to the stack copy stays below 4 KiB. */
	if (has_user && !(flags & ARCPROF_SAMPLE_OFFCPU))
		size += read_runtime_frames(data, size, task, tgid, tid, &flags);
	if (has_user) {
		/* fp mode copies a little stack anyway: the unwind tables then
		 * recover the caller of a leaf that has not set up its frame. */
		__u32 want = unwind_mode == ARCPROF_UNWIND_FP ? ARCPROF_FP_STACK_COPY : stack_copy_bytes;
		flags |= ARCPROF_SAMPLE_HAS_REGS;
		size += copy_user_state(data, size, task, want, &flags);
	}
	e->flags = flags;
	/* 64-bit, and kept in its register: the verifier must see the very value
	 * passed to the helper bounded (the runtime block widened the offsets). */
	__u64 out = size;
	if (out > SCRATCH_SIZE)
		out = SCRATCH_SIZE;
	asm volatile("" : "+r"(out));
	if (out > SCRATCH_SIZE)
		return -1;
	__u32 zero = 0;
	void *ring = bpf_map_lookup_elem(&sample_rings, &zero);
	if (!ring)
		return -1;
	/* No wakeup but from a ring that may still grow and is filling up: the
	 * loader drains the ring on a timer (see ring_max_bytes). */
	__u64 wake = BPF_RB_NO_WAKEUP;
	__u64 ring_size = bpf_ringbuf_query(ring, BPF_RB_RING_SIZE);
	if (ring_size < ring_max_bytes && bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) > ring_size / 4) {
		wake = BPF_RB_FORCE_WAKEUP;
		ring_wakeups++;
	}
	return bpf_ringbuf_output(ring, data, out, wake) ? -1 : 0;
}

static __always_inline int pid_targeted(__u32 tgid)
{
	return (target_bits[(tgid / 64) & (ARCPROF_PID_LIMIT / 64 - 1)] >> (tgid % 64)) & 1;
}

/* The current task is in (or below) one of the chosen cgroups. */
static __always_inline int cgroup_targeted(void)
{
	for (int i = 0; i < ARCPROF_CGROUP_LEVELS; i++) {
		__u32 level = cgroup_levels[i];
		if (level == 0)
			break;
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);
		if (id && bpf_map_lookup_elem(&target_cgroups, &id))
			return 1;
	}
	return 0;
}

/* The same for another task (the one a context switch brings back): its
 * default-hierarchy cgroup's ancestors, read from the task. */
static __always_inline int task_cgroup_targeted(struct task_struct *task)
{
	struct cgroup *cgrp = BPF_CORE_READ(task, cgroups, dfl_cgrp);
	if (!cgrp)
		return 0;
	int depth = BPF_CORE_READ(cgrp, level);
	for (int i = 0; i < ARCPROF_CGROUP_LEVELS; i++) {
		__u32 level = cgroup_levels[i];
		if (level == 0)
			break;
		if ((int)level > depth)
			continue;
		struct cgroup *ancestor = NULL;
		bpf_core_read(&ancestor, sizeof(ancestor), &cgrp->ancestors[level & 255]);
		if (!ancestor)
			continue;
		__u64 id = BPF_CORE_READ(ancestor, kn, id);
		if (id && bpf_map_lookup_elem(&target_cgroups, &id))
			return 1;
	}
	return 0;
}

/* Is a task of process tgid profiled: the current one (task NULL) or
 * `task`? With a pid filter and a cgroup filter, either admits it. */
static __always_inline int targeted_task(__u32 tgid, struct task_struct *task)
{
	if (tgid == self_pid && tgid != 0)
		return 0;
	if (!filter_pids && !filter_cgroups)
		return 1;
	if (filter_pids && pid_targeted(tgid))
		return 1;
	if (!filter_cgroups)
		return 0;
	return task ? task_cgroup_targeted(task) : cgroup_targeted();
}

static __always_inline int targeted(__u32 tgid)
{
	return targeted_task(tgid, NULL);
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 tid = (__u32)id;

	if (tgid == self_pid && tgid != 0)
		return 0;
	if (!targeted(tgid)) {
		count(ARCPROF_CTR_FILTERED);
		return 0;
	}
	count(ARCPROF_CTR_SAMPLES);

	__u32 cpu = bpf_get_smp_processor_id();
	struct scratch_buf *buf = bpf_map_lookup_elem(&scratch, &cpu);
	if (!buf)
		return 0;
	/* The context only allows 8-byte loads; cs is the 18th u64 of pt_regs. */
	__u64 cs = ((__u64 *)&ctx->regs)[17];
	__u16 flags = (cs & 3) ? ARCPROF_SAMPLE_USER_MODE : 0;
	if (emit_record(ctx, buf->data, tgid, tid, cpu, flags, 0, !(flags & ARCPROF_SAMPLE_USER_MODE)))
		count(ARCPROF_CTR_LOST_RINGBUF);
	return 0;
}

/* ---------------------------------------------------------------- off-CPU */

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
	 * then user ip, sp and bp. A switch that finds the same four values
	 * has the same key and skips the hash. */
	__u64 where[4];
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

/* At every context switch: `prev` (the current task) goes off CPU, `next`
 * comes back from wherever it was. Everything stays cheap but for the first
 * time a key is seen: then its stack is written, with the same record and
 * unwinding data as a sample. A key is the thread, its state and the user
 * registers it entered the kernel with (syscall number, instruction, stack
 * and frame pointer): a thread that blocks at the same place again has the
 * same stack. A thread that keeps blocking at one place (a ping-pong, a
 * worker loop) costs two array lookups in offcpu_slots (inlined, no call),
 * one load of the run queue's clock and four loads of its user registers
 * compared with those of its last switch, no kernel call; its time is summed in its slot (or task
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
	__u64 ip = 0, sp = 0, bp = 0;
	if (prev->mm) {
		/* Plain loads, no probe-read helper calls. */
		struct pt_regs *regs = user_regs_of(prev);
		nr = regs->orig_ax;
		ip = regs->ip;
		sp = regs->sp;
		bp = regs->bp;
	}
	__u64 state_nr = (__u64)state << 32 | (__u32)nr;
	if (st->known && st->where[0] == state_nr && st->where[1] == ip && st->where[2] == sp &&
	    st->where[3] == bp) {
		/* Where it blocked last time: same key, nothing to hash. */
		st->ts = now ? now | 1 : 0;
		return 0;
	}
	__u64 key = mix64(0x9e3779b97f4a7c15ull, (__u64)tgid << 32 | tid);
	key = mix64(key, state_nr);
	key = mix64(key, ip);
	key = mix64(key, sp);
	key = mix64(key, bp);

	if (!st->known || st->key != key) {
		offcpu_flush(st); /* the previous key's time */
		if (!bpf_map_lookup_elem(&offcpu_time, &key)) {
			__u32 cpu = bpf_get_smp_processor_id();
			struct scratch_buf *buf = bpf_map_lookup_elem(&scratch, &cpu);
			if (!buf)
				return 0;
			struct offcpu_info *info =
				(struct offcpu_info *)(buf->data + ARCPROF_SAMPLE_HEADER_SIZE);
			info->key = key;
			info->syscall = (__s32)nr;
			info->state = state;
			if (emit_record(ctx, buf->data, tgid, tid, cpu, ARCPROF_SAMPLE_OFFCPU,
					ARCPROF_OFFCPU_INFO_SIZE, 1)) {
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
	/* 0 means "on CPU" (or not timed), so a start is never 0. */
	st->ts = now ? now | 1 : 0;
	return 0;
}

/* Follow children of targeted processes: a forked child of a target is a target. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	if (!filter_pids)
		return 0;
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	/* Children of followed processes; a cgroup filter follows children by
	 * itself (they start in their parent's cgroup). */
	if (ptgid == self_pid || !pid_targeted(ptgid))
		return 0;
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	if (ctgid == ptgid)
		return 0; /* a new thread of a target */
	__u8 one = 1;
	bpf_map_update_elem(&target_pids, &ctgid, &one, BPF_ANY);
	__sync_fetch_and_or(&target_bits[(ctgid / 64) & (ARCPROF_PID_LIMIT / 64 - 1)],
			    1ull << (ctgid % 64));
	count(ARCPROF_CTR_FOLLOWED_FORKS);
	return 0;
}
