/* `arcprof trace`: the layouts bpf/trace.bpf.c and loader/trace_probes.cpp
 * share. One node per (thread, parent node, function): the exact call tree
 * of the traced subgraph, built in BPF from entry and return probes. */
#ifndef ARCPROF_BPF_TRACE_H
#define ARCPROF_BPF_TRACE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Shadow stack frames per thread (a power of two: the index is masked).
 * Deeper calls are not counted (trace_counters.depth_overflow). */
#define ARCPROF_TRACE_MAX_DEPTH 256
#define ARCPROF_TRACE_MAX_NODES 262144
#define ARCPROF_TRACE_MAX_TGIDS 64

/* The attach cookie of every probe: the function id in the low 30 bits,
 * ROOT when the function is a root of the trace, RET on the entry of a
 * function that is a single `ret` (its entry is its exit). */
#define ARCPROF_TRACE_ROOT_BIT 0x80000000u
#define ARCPROF_TRACE_RET_BIT 0x40000000u
#define ARCPROF_TRACE_FUNC_MASK 0x3fffffffu

struct trace_node_key {
	__u32 tid;
	__u32 parent; /* node id + 1; 0: the thread (a root call) */
	__u32 func;
	__u32 pad;
};

struct trace_node {
	__u32 tgid;
	__u32 tid;
	__u32 parent; /* node id + 1; 0: the thread */
	__u32 func;
	__u64 calls;      /* entries: every call counts when it starts */
	__u64 returns;    /* of which returned (a ret or tail jump seen) */
	__u64 unreturned; /* of which never returned (longjmp, exception, thread exit) */
	__u64 incl_ns;    /* inclusive time of the calls that returned */
	__u64 self_ns;    /* incl_ns less the inclusive time of returned children */
};

struct trace_counters {
	__u64 events;
	__u64 lost_nodes;     /* the node map was full: a call not counted */
	__u64 depth_overflow; /* deeper than ARCPROF_TRACE_MAX_DEPTH: not counted */
	__u64 no_storage;     /* no shadow stack for a thread: not counted */
};

#endif
