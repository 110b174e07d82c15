// SPDX-License-Identifier: GPL-2.0
/* The sampler: a perf_event program attached to one sampling event per online
 * CPU. Each sample becomes one variable-size ring buffer record holding the
 * kernel and the user stack (frame-pointer walks by bpf_get_stack). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "events.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader between open and load. */
const volatile __u32 filter_pids = 0; /* 1: only processes in target_pids */
const volatile __u32 self_pid = 0;    /* arcprof itself, never sampled */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by the loader (--buffer-mb) */
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);  /* tgid */
	__type(value, __u8);
} target_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ARCPROF_CTR_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Scratch space for building one record: too large for the 512-byte stack. */
struct sample_buf {
	struct sample_event hdr;
	__u64 ips[2 * (ARCPROF_MAX_STACK + 1)];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_buf);
} scratch SEC(".maps");

/* Side-band perf records (mmap2/comm/task) are read through this map by the
 * loader (perf_buffer__new_raw); no program writes to it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} sideband SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		*v += 1;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 tid = (__u32)id;
	__u32 zero = 0;

	if (tgid == self_pid && tgid != 0)
		return 0;
	if (filter_pids && !bpf_map_lookup_elem(&target_pids, &tgid)) {
		count(ARCPROF_CTR_FILTERED);
		return 0;
	}
	count(ARCPROF_CTR_SAMPLES);

	struct sample_buf *buf = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf)
		return 0;
	struct sample_event *e = &buf->hdr;
	e->timestamp_ns = bpf_ktime_get_ns();
	e->pid = tgid;
	e->tid = tid;
	e->cpu = bpf_get_smp_processor_id();
	/* The context only allows 8-byte loads; cs is the 18th u64 of pt_regs. */
	__u64 cs = ((__u64 *)&ctx->regs)[17];
	e->flags = (cs & 3) ? ARCPROF_SAMPLE_USER_MODE : 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));

	long kbytes = 0;
	if (!(e->flags & ARCPROF_SAMPLE_USER_MODE)) {
		kbytes = bpf_get_stack(ctx, buf->ips, ARCPROF_MAX_STACK * sizeof(__u64), 0);
		if (kbytes < 0) {
			e->flags |= ARCPROF_SAMPLE_KSTACK_ERR;
			count(ARCPROF_CTR_KSTACK_ERR);
			kbytes = 0;
		}
	}
	__u32 kn = (__u32)kbytes / sizeof(__u64);
	if (kn > ARCPROF_MAX_STACK)
		kn = ARCPROF_MAX_STACK;

	long ubytes = 0;
	if (tgid != 0) { /* the idle task has no user stack */
		ubytes = bpf_get_stack(ctx, &buf->ips[kn & ARCPROF_MAX_STACK],
				       ARCPROF_MAX_STACK * sizeof(__u64), BPF_F_USER_STACK);
		if (ubytes < 0) {
			e->flags |= ARCPROF_SAMPLE_USTACK_ERR;
			count(ARCPROF_CTR_USTACK_ERR);
			ubytes = 0;
		}
	}
	__u32 un = (__u32)ubytes / sizeof(__u64);
	if (un > ARCPROF_MAX_STACK)
		un = ARCPROF_MAX_STACK;
	e->kstack_len = kn;
	e->ustack_len = un;

	__u64 size = ARCPROF_SAMPLE_HEADER_SIZE + (__u64)(kn + un) * sizeof(__u64);
	if (size > sizeof(*buf))
		size = sizeof(*buf);
	/* No wakeup: the loader drains the ring on a timer; waking it per sample
	 * cost about 3 points of slowdown on the profiled workload. */
	if (bpf_ringbuf_output(&samples, buf, size, BPF_RB_NO_WAKEUP))
		count(ARCPROF_CTR_LOST_RINGBUF);
	return 0;
}

/* Follow children of targeted processes: a forked child of a target is a target. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	if (!filter_pids)
		return 0;
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	if (!bpf_map_lookup_elem(&target_pids, &ptgid))
		return 0;
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	if (ctgid == ptgid)
		return 0; /* a new thread of a target */
	__u8 one = 1;
	bpf_map_update_elem(&target_pids, &ctgid, &one, BPF_ANY);
	count(ARCPROF_CTR_FOLLOWED_FORKS);
	return 0;
}
