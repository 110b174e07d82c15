/* The stack record every program writes, and the filter it passes first:
 * shared by the sampler (sample.bpf.c) and each value source's program
 * (offcpu.bpf.c, alloc.bpf.c, ...; docs/design.md "Value sources"). Each
 * object that includes this gets its own copy of these maps and globals at
 * open; a value source's loader then points them at the sampler's
 * (Sampler::ShareRecordMaps): one ring, one scratch buffer, one pid and
 * cgroup filter, one set of counters, and the same record layout, so the
 * loader decodes, unwinds and names every stack alike.
 *
 * Before including: vmlinux.h, the libbpf headers and events.h. The sampler
 * defines ARCPROF_RECORD_FIRST_RING (the name of the first ring, which it
 * creates) and ARCPROF_RECORD_RUNTIME_FRAMES (the interpreter walk it adds
 * to samples); a value source defines neither.
 *
 * The scratch buffer is one per CPU: a program that builds a record must not
 * be interrupted by another that builds one on the same CPU. sched_switch
 * runs with interrupts off, so off-CPU shares the sampler's. A program that
 * can be interrupted (by the sampler's perf event) or preempted (uprobes run
 * preemptible) defines ARCPROF_RECORD_OWN_SCRATCH: its object keeps its own
 * scratch buffer (Sampler::ShareRecordMaps with own_scratch) and takes it
 * with take_scratch(), which hands it out once per CPU at a time. */
#ifndef ARCPROF_STACK_RECORD_BPF_H
#define ARCPROF_STACK_RECORD_BPF_H

/* How much user stack a record copies in dwarf/hybrid mode, and whether a
 * deeper stack is copied down to its base: the sampler's settings, unless a
 * source whose records come in bursts (a realloc chain samples every call)
 * asks for less before including this. */
#ifndef ARCPROF_RECORD_STACK_COPY
#define ARCPROF_RECORD_STACK_COPY stack_copy_bytes
#endif
#ifndef ARCPROF_RECORD_DEEP_STACKS
#define ARCPROF_RECORD_DEEP_STACKS copy_deep_stacks
#endif

/* Set by the loader between open and load; a value source's object gets a
 * copy of the sampler's (Sampler::ShareRecordMaps). */
const volatile __u32 filter_pids SEC(".rodata.record") = 0; /* 1: only processes in target_pids */
const volatile __u32 self_pid SEC(".rodata.record") = 0;    /* arcprof itself, never sampled */
const volatile __u32 unwind_mode SEC(".rodata.record") = ARCPROF_UNWIND_FP;
const volatile __u32 stack_copy_bytes SEC(".rodata.record") = 64 * 1024; /* dwarf/hybrid; capped to ARCPROF_MAX_STACK_COPY */
const volatile __u32 copy_deep_stacks SEC(".rodata.record") = 0; /* 1: a deeper stack is copied to its base (copy_user_state) */
const volatile __u32 filter_cgroups SEC(".rodata.record") = 0; /* 1: only tasks in (or below) a cgroup of target_cgroups */

/* The sample ring in use, in slot 0 of sample_rings. It starts small and the
 * loader replaces it by a larger one when a drain finds it filling (up to
 * ring_max_bytes): its pages are mapped into the loader (twice) from the
 * start, so a short command must not pay for the ring a busy machine needs.
 * `samples` is the first ring (sized by the loader). */
struct sample_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
};

#ifdef ARCPROF_RECORD_FIRST_RING
struct sample_ring ARCPROF_RECORD_FIRST_RING SEC(".maps");
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct sample_ring);
} sample_rings SEC(".maps")
#ifdef ARCPROF_RECORD_FIRST_RING
	= {
	.values = { [0] = &ARCPROF_RECORD_FIRST_RING },
}
#endif
;

/* Below this ring size a record that finds the ring more than a quarter full
 * wakes the loader, which drains at once and grows the ring; at it, records
 * never wake it (the drain timer alone: a wakeup per sample cost about 3
 * points of slowdown on the profiled workload). Set by the loader through
 * the mmapped .bss, and lowered when a larger ring cannot be had. */
__u64 ring_max_bytes SEC(".data.record");
/* Counts those wakeups: the loader looks at it between records, so a ring
 * that fills while a long drain runs grows at once (no atomics: any change
 * is the signal). */
__u64 ring_wakeups SEC(".data.record");

/* The same set as one bit per tgid, for every pid the kernel can hand out
 * (ARCPROF_PID_LIMIT): the test at every sample and context switch is one
 * load from global data instead of a hash lookup, so a switch between
 * untargeted threads costs a few nanoseconds. Bits are set and cleared with
 * atomic operations, here and by the loader through the mmapped .data.record, next to
 * its target_pids updates. 512 KiB. */
__u64 target_bits[ARCPROF_PID_LIMIT / 64] SEC(".data.record");

/* The chosen cgroups (record/continuous --container, --cgroup, --service;
 * cgroup v2 ids). A task is targeted when the ancestor of its cgroup at one
 * of the levels in cgroup_levels (the depths of the chosen cgroups, 0-ended,
 * written by the loader through the mmapped .data.record) is in the map: one helper
 * call and one lookup per distinct depth, and a process that joins a chosen
 * cgroup, or a child it starts, is sampled from then on. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ARCPROF_MAX_CGROUPS);
	__type(key, __u64);  /* cgroup id */
	__type(value, __u8);
} target_cgroups SEC(".maps");

__u32 cgroup_levels[ARCPROF_CGROUP_LEVELS] SEC(".data.record");

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


#ifdef ARCPROF_RECORD_OWN_SCRATCH
/* This CPU's scratch buffer is being built in (own_scratch objects only). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} scratch_busy SEC(".maps");

/* The buffer of this CPU, or NULL when a run that was interrupted or
 * preempted on this CPU holds it (the caller counts its record as lost).
 * Give it back with give_scratch(). */
static __always_inline struct scratch_buf *take_scratch(__u32 cpu, __u64 **busy_out)
{
	__u32 zero = 0;
	__u64 *busy = bpf_map_lookup_elem(&scratch_busy, &zero);
	if (!busy || __sync_val_compare_and_swap(busy, 0, 1) != 0)
		return NULL;
	*busy_out = busy;
	struct scratch_buf *buf = bpf_map_lookup_elem(&scratch, &cpu);
	if (!buf)
		*busy = 0;
	return buf;
}

static __always_inline void give_scratch(__u64 *busy)
{
	*busy = 0;
}
#endif

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
	if (ARCPROF_RECORD_DEEP_STACKS) {
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
 * copy. The same path for samples and every value source's stacks, so that
 * all unwind alike. Returns 0 when the record was written. */
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
#ifdef ARCPROF_RECORD_RUNTIME_FRAMES
	/* Interpreter frames (runtimes/): before the registers, so that every
	 * offset up to the stack copy stays below 4 KiB. */
	if (has_user)
		size += ARCPROF_RECORD_RUNTIME_FRAMES(data, size, task, tgid, tid, &flags);
#endif
	if (has_user) {
		/* fp mode copies a little stack anyway: the unwind tables then
		 * recover the caller of a leaf that has not set up its frame. */
		__u32 want = unwind_mode == ARCPROF_UNWIND_FP ? ARCPROF_FP_STACK_COPY : ARCPROF_RECORD_STACK_COPY;
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

#endif /* ARCPROF_STACK_RECORD_BPF_H */
