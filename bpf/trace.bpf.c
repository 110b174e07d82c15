// SPDX-License-Identifier: GPL-2.0
/* `arcprof trace`: exact call counts and times of one call subgraph.
 *
 * trace_entry runs at the first instruction of every probed function,
 * trace_exit at each of its `ret` instructions and direct tail jumps (the
 * loader decodes the code; no uretprobes: they replace return addresses,
 * and a C++ exception unwinding through such a frame ends in
 * std::terminate). Both are uprobe_multi programs; the attach cookie names
 * the function.
 *
 * Each thread keeps a shadow stack in task storage. A frame is identified by
 * its entry stack pointer, the address of its return address: a `ret` or a
 * tail jump at stack pointer S ends the frames that entered at S; frames
 * that entered below S (or at or below the stack pointer of a new entry)
 * can never return: a longjmp or an exception went past them. They are
 * counted as unreturned, with no time (none is guessed). Outside a root
 * frame a probe only looks the thread's storage up and returns. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "trace.h"

char LICENSE[] SEC("license") = "GPL";

struct trace_frame {
	__u64 entry_sp;
	__u64 t0;
	__u64 child_ns;
	__u32 node; /* node id + 1; 0: not counted (map full) */
	__u32 pad;
};

struct shadow_stack {
	__u32 depth;
	__u32 pad;
	struct trace_frame frames[ARCPROF_TRACE_MAX_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct shadow_stack);
} shadows SEC(".maps");

/* The processes traced (and arcprof itself while it calibrates). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ARCPROF_TRACE_MAX_TGIDS);
	__type(key, __u32);
	__type(value, __u32);
} tgids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ARCPROF_TRACE_MAX_NODES);
	__type(key, struct trace_node_key);
	__type(value, __u32); /* node id */
} node_ids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ARCPROF_TRACE_MAX_NODES);
	__type(key, __u32);
	__type(value, struct trace_node);
} nodes SEC(".maps");

__u32 next_node = 0;
struct trace_counters counters = {};

static __always_inline struct trace_node *node_of(__u32 id_plus_one)
{
	__u32 id = id_plus_one - 1;
	if (id_plus_one == 0)
		return 0;
	return bpf_map_lookup_elem(&nodes, &id);
}

/* Ends the frames on top of the stack that can no longer return (entered at
 * or below `dead_below`), then those that return at `sp` (with `now`). */
static __always_inline void unwind(struct shadow_stack *s, __u64 dead_below, __u64 returns_at,
				   __u64 now)
{
	for (int i = 0; i < ARCPROF_TRACE_MAX_DEPTH; i++) {
		__u32 d = s->depth;
		if (d == 0)
			return;
		struct trace_frame *f = &s->frames[(d - 1) & (ARCPROF_TRACE_MAX_DEPTH - 1)];
		struct trace_node *n = node_of(f->node);
		if (f->entry_sp <= dead_below) {
			if (n)
				__sync_fetch_and_add(&n->unreturned, 1);
		} else if (f->entry_sp == returns_at) {
			__u64 incl = now - f->t0;
			if (n) {
				__sync_fetch_and_add(&n->returns, 1);
				__sync_fetch_and_add(&n->incl_ns, incl);
				__sync_fetch_and_add(&n->self_ns, incl > f->child_ns ? incl - f->child_ns : 0);
			}
			if (d >= 2)
				s->frames[(d - 2) & (ARCPROF_TRACE_MAX_DEPTH - 1)].child_ns += incl;
		} else {
			return;
		}
		s->depth = d - 1;
	}
}

static __always_inline __u32 node_for(__u32 tgid, __u32 tid, __u32 parent, __u32 func)
{
	struct trace_node_key key = {.tid = tid, .parent = parent, .func = func};
	__u32 *found = bpf_map_lookup_elem(&node_ids, &key);
	if (found)
		return *found + 1;
	__u32 id = __sync_fetch_and_add(&next_node, 1);
	if (id >= ARCPROF_TRACE_MAX_NODES)
		return 0;
	struct trace_node *n = bpf_map_lookup_elem(&nodes, &id);
	if (!n)
		return 0;
	n->tgid = tgid;
	n->tid = tid;
	n->parent = parent;
	n->func = func;
	if (bpf_map_update_elem(&node_ids, &key, &id, BPF_NOEXIST) != 0)
		return 0;
	return id + 1;
}

SEC("uprobe")
int trace_entry(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	if (!bpf_map_lookup_elem(&tgids, &tgid))
		return 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 func = cookie & ARCPROF_TRACE_FUNC_MASK;
	int root = (cookie & ARCPROF_TRACE_ROOT_BIT) != 0;
	struct task_struct *task = bpf_get_current_task_btf();
	struct shadow_stack *s = bpf_task_storage_get(&shadows, task, 0, 0);
	if (!s || s->depth == 0) {
		if (!root)
			return 0;
		if (!s)
			s = bpf_task_storage_get(&shadows, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!s) {
			__sync_fetch_and_add(&counters.no_storage, 1);
			return 0;
		}
	}
	__u64 now = bpf_ktime_get_ns();
	__u64 sp = PT_REGS_SP(ctx);
	__sync_fetch_and_add(&counters.events, 1);
	/* A frame that entered at or below this call's return address slot is
	 * gone: the stack was cut back past it. */
	unwind(s, sp, 0, now);
	__u32 d = s->depth;
	if (d == 0 && !root)
		return 0;
	if (d >= ARCPROF_TRACE_MAX_DEPTH) {
		__sync_fetch_and_add(&counters.depth_overflow, 1);
		return 0;
	}
	__u32 parent = d > 0 ? s->frames[(d - 1) & (ARCPROF_TRACE_MAX_DEPTH - 1)].node : 0;
	if (d > 0 && parent == 0) {
		/* under a frame that was not counted: not counted either */
		__sync_fetch_and_add(&counters.lost_nodes, 1);
	}
	__u32 node = (d > 0 && parent == 0) ? 0 : node_for(tgid, tid, parent, func);
	if (node == 0 && !(d > 0 && parent == 0))
		__sync_fetch_and_add(&counters.lost_nodes, 1);
	struct trace_node *n = node_of(node);
	if (n)
		__sync_fetch_and_add(&n->calls, 1);
	if (cookie & ARCPROF_TRACE_RET_BIT) {
		/* a function that is one ret: returned at once */
		if (n)
			__sync_fetch_and_add(&n->returns, 1);
		return 0;
	}
	struct trace_frame *f = &s->frames[d & (ARCPROF_TRACE_MAX_DEPTH - 1)];
	f->entry_sp = sp;
	f->child_ns = 0;
	f->node = node;
	s->depth = d + 1;
	f->t0 = bpf_ktime_get_ns();
	return 0;
}

SEC("uprobe")
int trace_exit(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	if (!bpf_map_lookup_elem(&tgids, &tgid))
		return 0;
	struct shadow_stack *s = bpf_task_storage_get(&shadows, bpf_get_current_task_btf(), 0, 0);
	if (!s || s->depth == 0)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u64 sp = PT_REGS_SP(ctx);
	__sync_fetch_and_add(&counters.events, 1);
	/* At a ret (or a tail jump) the stack pointer is the frame's entry one. */
	unwind(s, sp - 1, sp, now);
	return 0;
}
