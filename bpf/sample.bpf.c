// SPDX-License-Identifier: GPL-2.0
/* The sampler: a perf_event program attached to one sampling event per online
 * CPU. Each sample becomes one variable-size ring buffer record holding the
 * kernel and the user stack (frame-pointer walks by bpf_get_stack) and, for
 * dwarf/hybrid unwinding, the user registers and a copy of the user stack
 * (stack_record.bpf.h, which value sources such as off-CPU time share). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "events.h"
#include "runtimes.bpf.h"

#define ARCPROF_RECORD_FIRST_RING samples
#define ARCPROF_RECORD_RUNTIME_FRAMES read_runtime_frames
#include "stack_record.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* The followed processes (with filter_pids), for the loader to list and sweep;
 * the programs test target_bits instead. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);  /* tgid */
	__type(value, __u8);
} target_pids SEC(".maps");

/* Side-band perf records (mmap2/comm/task) are read through this map by the
 * loader (perf_buffer__new_raw); no program writes to it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} sideband SEC(".maps");

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

/* A followed process leaves the filter when its last thread exits, here
 * rather than when the loader applies the exit: by then its pid may be
 * another, unrelated process's (a busy machine reuses pids within
 * milliseconds), whose samples would be recorded under the followed one. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	if (!filter_pids)
		return 0;
	__u32 tgid = BPF_CORE_READ(task, tgid);
	if (!pid_targeted(tgid))
		return 0;
	/* signal->live is decremented before the tracepoint: 0 once the last
	 * thread of the group exits. */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	__sync_fetch_and_and(&target_bits[(tgid / 64) & (ARCPROF_PID_LIMIT / 64 - 1)],
			     ~(1ull << (tgid % 64)));
	bpf_map_delete_elem(&target_pids, &tgid);
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
