/* Records shared by the BPF programs and the C++ loader. Fixed-width types and
 * fixed-size arrays only; sizes are checked on both sides. */
#ifndef ARCPROF_BPF_EVENTS_H
#define ARCPROF_BPF_EVENTS_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

#define ARCPROF_MAX_STACK 127 /* frames per stack, like perf's default max */
#define ARCPROF_COMM_LEN 16
/* Pids are below this (the kernel's PID_MAX_LIMIT on 64-bit): the size of the
 * pid filter bitmap (target_bits in sample.bpf.c). */
#define ARCPROF_PID_LIMIT (1u << 22)

/* sample_event.flags */
#define ARCPROF_SAMPLE_USER_MODE 0x1 /* the sampled IP was in user mode */
#define ARCPROF_SAMPLE_KSTACK_ERR 0x2 /* bpf_get_stack failed for the kernel stack */
#define ARCPROF_SAMPLE_USTACK_ERR 0x4 /* bpf_get_stack failed for the user stack */
#define ARCPROF_SAMPLE_HAS_REGS 0x8   /* a user_regs block and a stack copy follow the frames */
#define ARCPROF_SAMPLE_STACK_FAULT 0x10 /* the stack copy stopped at a page it could not read */
#define ARCPROF_SAMPLE_SOURCE 0x20 /* a value source's stack: a struct source_info follows the header */
#define ARCPROF_SAMPLE_HAS_RUNTIME 0x40 /* interpreter frames follow the frames (bpf/runtimes.h) */

/* Unwinding modes (rodata unwind_mode). */
#define ARCPROF_UNWIND_FP 0
#define ARCPROF_UNWIND_DWARF 1
#define ARCPROF_UNWIND_HYBRID 2

/* Largest user stack copy, in bytes: --stack-kb is capped to it, and a deep
 * stack is copied down to its base up to this size (a compiler's deepest
 * recursions need about 210 KiB). */
#define ARCPROF_MAX_STACK_COPY (256 * 1024)
/* Bytes copied in fp mode: enough for the CFI fix of the first frame. */
#define ARCPROF_FP_STACK_COPY 512
#define ARCPROF_USER_REGS 17 /* DWARF x86-64 order: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */

/* One sample. Variable size: the header is followed by kstack_len kernel
 * frames (leaf first) then ustack_len user frames (leaf first). */
struct sample_event {
	__u64 timestamp_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u32 pid;          /* thread group id */
	__u32 tid;
	__u32 cpu;
	__u16 flags;
	__u8 kstack_len;
	__u8 ustack_len;
	char comm[ARCPROF_COMM_LEN];
	/* followed by the __u64 frames */
};

#define ARCPROF_SAMPLE_HEADER_SIZE 40

/* Follows the frames when ARCPROF_SAMPLE_HAS_REGS is set; stack_len bytes
 * copied from regs[7] (rsp) upwards follow it. */
struct user_regs_block {
	__u64 regs[ARCPROF_USER_REGS];
	__u32 stack_len;
	__u32 reserved;
};

#define ARCPROF_USER_REGS_SIZE 144

/* A value source's record (docs/design.md "Value sources"): a stack record
 * like a sample, with ARCPROF_SAMPLE_SOURCE and this block between the header
 * and the frames. The loader hands it to the source named here, which keeps
 * the stack under `key` or folds `values` at once; what the words mean is
 * the source's (off-CPU: key of the thread's blocking place, arg the syscall,
 * values[0] the task state; bpf/offcpu.h). */
struct source_info {
	__u64 key;
	__u32 source; /* ARCPROF_SOURCE_* */
	__s32 arg;
	__u64 values[2];
};
#define ARCPROF_SOURCE_INFO_SIZE 32

/* Value sources with records (source_info.source). Ids from 0x8000 up are
 * left to sources outside the tree (tests). */
#define ARCPROF_SOURCE_OFFCPU 1
#define ARCPROF_SOURCE_ALLOC 2

/* The cgroup filter (record --container/--cgroup/--service): at most this
 * many chosen cgroups, at this many distinct depths. */
#define ARCPROF_MAX_CGROUPS 4096
#define ARCPROF_CGROUP_LEVELS 8

/* Indexes of the per-CPU counters map. */
enum arcprof_counter {
	ARCPROF_CTR_SAMPLES = 0,       /* samples seen by the program (after filtering) */
	ARCPROF_CTR_LOST_RINGBUF = 1,  /* ring buffer full: record dropped */
	ARCPROF_CTR_KSTACK_ERR = 2,
	ARCPROF_CTR_USTACK_ERR = 3,
	ARCPROF_CTR_FILTERED = 4,      /* samples of processes outside the pid or cgroup filter */
	ARCPROF_CTR_FOLLOWED_FORKS = 5, /* children added to the pid filter */
	ARCPROF_CTR_STACK_FAULT = 6,   /* stack copies cut short by an unreadable page */
	ARCPROF_CTR_OFFCPU_SWITCHES = 7, /* switches out of targeted threads, added when their time is (per batch) */
	ARCPROF_CTR_OFFCPU_STACKS = 8,   /* off-CPU stack records written (one per new key) */
	ARCPROF_CTR_OFFCPU_LOST_STACKS = 9, /* ring buffer full: retried at the key's next switch */
	ARCPROF_CTR_OFFCPU_DROPPED = 10, /* intervals whose key had no slot (offcpu_time full) */
	ARCPROF_CTR_OFFCPU_DROPPED_NS = 11,
	ARCPROF_CTR_COUNT = 16,
};

#ifdef __BPF__
_Static_assert(sizeof(struct sample_event) == ARCPROF_SAMPLE_HEADER_SIZE, "sample_event header");
#else
#ifdef __cplusplus
static_assert(sizeof(struct sample_event) == ARCPROF_SAMPLE_HEADER_SIZE, "sample_event header");
static_assert(sizeof(struct user_regs_block) == ARCPROF_USER_REGS_SIZE, "user_regs_block");
static_assert(sizeof(struct source_info) == ARCPROF_SOURCE_INFO_SIZE, "source_info");
#endif
#endif
#ifdef __BPF__
_Static_assert(sizeof(struct user_regs_block) == ARCPROF_USER_REGS_SIZE, "user_regs_block");
_Static_assert(sizeof(struct source_info) == ARCPROF_SOURCE_INFO_SIZE, "source_info");
#endif

#endif /* ARCPROF_BPF_EVENTS_H */
