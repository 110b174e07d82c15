// SPDX-License-Identifier: GPL-2.0
/* Allocation profiling (record --alloc), a value source (docs/design.md
 * "Allocations"): uprobes on libc's malloc, calloc, realloc, posix_memalign,
 * aligned_alloc, memalign and free (C++ new and delete reach them). See
 * bpf/alloc.h. Uprobes run preemptible and the sampler may interrupt them:
 * records are built in this object's own scratch buffer. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "events.h"
#define ARCPROF_RECORD_OWN_SCRATCH
/* At most 16 KiB of stack per record, never the deep copy: a realloc chain of
 * large blocks samples nearly every call, and 64-256 KiB records would fill
 * the ring. */
#define ARCPROF_RECORD_STACK_COPY (stack_copy_bytes < 16384 ? stack_copy_bytes : 16384)
#define ARCPROF_RECORD_DEEP_STACKS 0
#include "stack_record.bpf.h"
#include "alloc.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 sample_rate = 512 * 1024; /* mean bytes between samples */
const volatile __u32 exp_table[ARCPROF_ALLOC_EXP_STEPS] = {};

/* Per thread, by the tid's low bits (a thread whose slot another holds takes
 * it over with a fresh countdown: the exponential has no memory, so this
 * biases nothing). */
#define ALLOC_SLOTS 65536
struct alloc_slot {
	__u64 tid;
	__s64 remaining;   /* bytes until the next sample */
	__u64 depth;       /* allocator calls in progress (realloc calls malloc) */
	__u64 pending_key; /* the sampled call in progress, 0: none */
	__u64 pending_size;
	__u64 memptr;      /* posix_memalign: where the address is written */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ALLOC_SLOTS);
	__type(key, __u32);
	__type(value, struct alloc_slot);
} alloc_slots SEC(".maps");

/* The live sampled blocks (max_entries set by the loader: --alloc-max-blocks). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct alloc_block_key);
	__type(value, struct alloc_block);
} alloc_blocks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ARCPROF_ALLOC_CTR_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} alloc_counters SEC(".maps");

static __always_inline void alloc_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&alloc_counters, &idx);
	if (v)
		*v += 1;
}

static __always_inline __s64 next_interval(void)
{
	__u32 i = bpf_get_prandom_u32() & (ARCPROF_ALLOC_EXP_STEPS - 1);
	return (__s64)(((__u64)exp_table[i] * sample_rate) >> ARCPROF_ALLOC_EXP_SHIFT) + 1;
}

static __always_inline struct alloc_slot *slot_of(__u32 tid)
{
	__u32 idx = tid & (ALLOC_SLOTS - 1);
	struct alloc_slot *slot = bpf_map_lookup_elem(&alloc_slots, &idx);
	if (!slot)
		return NULL;
	if (slot->tid != tid) {
		slot->tid = tid;
		slot->remaining = next_interval();
		slot->depth = 0;
		slot->pending_key = 0;
	}
	return slot;
}

/* An allocator entered with `size` bytes asked for. */
static __always_inline int alloc_enter(struct pt_regs *ctx, __u64 size, __u64 memptr)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 tid = (__u32)id;
	if (!targeted(tgid))
		return 0;
	struct alloc_slot *slot = slot_of(tid);
	if (!slot)
		return 0;
	if (slot->depth++ > 0)
		return 0; /* inside realloc, calloc or memalign: theirs */
	slot->pending_key = 0;
	slot->remaining -= (__s64)size;
	if (slot->remaining > 0)
		return 0;
	slot->remaining = next_interval();

	__u32 cpu = bpf_get_smp_processor_id();
	__u64 *busy;
	struct scratch_buf *buf = take_scratch(cpu, &busy);
	if (!buf) {
		alloc_count(ARCPROF_ALLOC_CTR_LOST);
		return 0;
	}
	/* A unique id: the time and the CPU. */
	__u64 key = (bpf_ktime_get_ns() << 8) | (cpu & 255);
	struct source_info *info = (struct source_info *)(buf->data + ARCPROF_SAMPLE_HEADER_SIZE);
	info->key = key;
	info->source = ARCPROF_SOURCE_ALLOC;
	info->arg = 0;
	info->values[0] = size;
	info->values[1] = 0;
	int err = emit_record(ctx, buf->data, tgid, tid, cpu, ARCPROF_SAMPLE_SOURCE,
			      ARCPROF_SOURCE_INFO_SIZE, 0);
	give_scratch(busy);
	if (err) {
		alloc_count(ARCPROF_ALLOC_CTR_LOST);
		return 0;
	}
	alloc_count(ARCPROF_ALLOC_CTR_SAMPLED);
	slot->pending_key = key;
	slot->pending_size = size;
	slot->memptr = memptr;
	return 0;
}

/* The allocator returned `addr` (0: failed, or posix_memalign's result is
 * at memptr). */
static __always_inline int alloc_exit(__u64 addr, int from_memptr)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	__u32 idx = tid & (ALLOC_SLOTS - 1);
	struct alloc_slot *slot = bpf_map_lookup_elem(&alloc_slots, &idx);
	if (!slot || slot->tid != tid || slot->depth == 0)
		return 0;
	if (--slot->depth != 0 || !slot->pending_key)
		return 0;
	if (from_memptr) {
		__u64 p = 0;
		if (addr != 0 || bpf_probe_read_user(&p, sizeof(p), (void *)slot->memptr))
			p = 0; /* posix_memalign failed */
		addr = p;
	}
	if (addr) {
		struct alloc_block_key k = {.addr = addr, .pid = id >> 32};
		struct alloc_block b = {.key = slot->pending_key, .size = slot->pending_size};
		if (bpf_map_update_elem(&alloc_blocks, &k, &b, BPF_ANY))
			alloc_count(ARCPROF_ALLOC_CTR_UNTRACKED);
	} else {
		alloc_count(ARCPROF_ALLOC_CTR_FAILED);
	}
	slot->pending_key = 0;
	return 0;
}

static __always_inline void block_freed(__u64 addr)
{
	if (!addr)
		return;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	if (!targeted(tgid))
		return;
	struct alloc_block_key k = {.addr = addr, .pid = tgid};
	if (bpf_map_delete_elem(&alloc_blocks, &k) == 0)
		alloc_count(ARCPROF_ALLOC_CTR_FREED);
}

SEC("uprobe")
int BPF_KPROBE(on_malloc, __u64 size) { return alloc_enter(ctx, size, 0); }

SEC("uretprobe")
int BPF_KRETPROBE(on_malloc_ret, __u64 ret) { return alloc_exit(ret, 0); }

SEC("uprobe")
int BPF_KPROBE(on_calloc, __u64 n, __u64 size)
{
	/* Sizes past 2^32 elements or bytes each are taken as a failed call. */
	__u64 bytes = (n >> 32 || size >> 32) ? 0 : n * size;
	return alloc_enter(ctx, bytes, 0);
}

SEC("uprobe")
int BPF_KPROBE(on_realloc, __u64 ptr, __u64 size)
{
	/* The old block is gone (or moved: the new one is its own block). */
	block_freed(ptr);
	return alloc_enter(ctx, size, 0);
}

SEC("uprobe")
int BPF_KPROBE(on_posix_memalign, __u64 memptr, __u64 align, __u64 size)
{
	return alloc_enter(ctx, size, memptr);
}

SEC("uretprobe")
int BPF_KRETPROBE(on_posix_memalign_ret, __u64 ret) { return alloc_exit(ret, 1); }

/* aligned_alloc(align, size), memalign(align, size) */
SEC("uprobe")
int BPF_KPROBE(on_memalign, __u64 align, __u64 size) { return alloc_enter(ctx, size, 0); }

SEC("uprobe")
int BPF_KPROBE(on_free, __u64 ptr)
{
	block_freed(ptr);
	return 0;
}
