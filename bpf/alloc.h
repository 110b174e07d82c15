/* Allocation profiling (record --alloc), shared by bpf/alloc.bpf.c and its
 * loader (loader/alloc_source.cpp). Uprobes on libc's allocator sample
 * allocations by bytes: each thread counts down an exponentially
 * distributed number of bytes (mean: the sampling rate) and the allocation
 * that crosses zero is sampled, as tcmalloc and Go's heap profiler do. A
 * sampled allocation writes its stack (ARCPROF_SOURCE_ALLOC; source_info.key
 * a unique id, values[0] its size) and, once it returned, is kept in
 * alloc_blocks by (process, address) until it is freed. */
#ifndef ARCPROF_BPF_ALLOC_H
#define ARCPROF_BPF_ALLOC_H

#ifndef __BPF__
#include <linux/types.h>
#endif

/* -ln(u) for u at the middle of 1024 equal steps, 2^20 fixed point, scaled
 * by the loader so that the table's mean is exactly 1. */
#define ARCPROF_ALLOC_EXP_STEPS 1024
#define ARCPROF_ALLOC_EXP_SHIFT 20

struct alloc_block_key {
	__u64 addr;
	__u32 pid; /* tgid: the same address in two processes is two blocks */
	__u32 pad;
};

struct alloc_block {
	__u64 key;  /* the sample's id (source_info.key of its record) */
	__u64 size; /* bytes asked for */
};

enum arcprof_alloc_counter {
	ARCPROF_ALLOC_CTR_SAMPLED = 0,   /* allocations sampled (records written) */
	ARCPROF_ALLOC_CTR_LOST = 1,      /* sampled, but no record (ring full, buffer busy) */
	ARCPROF_ALLOC_CTR_UNTRACKED = 2, /* sampled blocks alloc_blocks had no room for */
	ARCPROF_ALLOC_CTR_FREED = 3,     /* frees of sampled blocks */
	ARCPROF_ALLOC_CTR_FAILED = 4,    /* sampled allocations that returned NULL */
	ARCPROF_ALLOC_CTR_COUNT = 8,
};

#endif /* ARCPROF_BPF_ALLOC_H */
