/* Per-thread time (PTT), interrupt and idle accounting: the records shared by
 * bpf/ptt.bpf.c and the C++ loader (loader/ptt_*.cpp). Fixed-width types and
 * fixed-size arrays only; sizes are checked on both sides. */
#ifndef ARCPROF_BPF_PTT_H
#define ARCPROF_BPF_PTT_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

#define ARCPROF_PTT_MAX_EVENTS 4 /* hardware/software counters read at each switch */
#define ARCPROF_PTT_COMM_LEN 16

/* The key of the `threads` hash map: a thread of one process. A tid that a
 * thread of another process takes later (after an exit, or with clone3's
 * set_tid) is another entry, so neither adds to the other's totals. */
struct ptt_thread_key {
	__u32 tid;
	__u32 pad;
	__u64 start_ns; /* its process's start: group_leader->start_boottime */
};
#define ARCPROF_PTT_THREAD_KEY_SIZE 16

/* One thread's totals in the `threads` hash map. The idle tasks (pid 0) are
 * not threads here: their time is per_cpu.idle_ns. */
struct ptt_thread {
	__u64 cpu_ns;      /* on CPU, interrupt time excluded */
	__u64 hardirq_ns;  /* hard interrupts that hit the CPU while it ran */
	__u64 softirq_ns;  /* soft interrupts run while it was the current task */
	__u64 dispatches;  /* times switched out (= switched in, but for the last dispatch) */
	__u64 interrupts;  /* hardirqs + softirqs while it ran */
	__u64 events[ARCPROF_PTT_MAX_EVENTS]; /* counter deltas, slot order of --ptt-events */
	__u64 start_ns;    /* its process's start (the key's): CLOCK_BOOTTIME ns, as /proc/PID/stat's starttime */
	__u32 pid;         /* thread group id */
	__u32 tid;
	char comm[ARCPROF_PTT_COMM_LEN];
};
#define ARCPROF_PTT_THREAD_SIZE 104

/* Per-CPU state and cumulative totals (a one-entry PERCPU_ARRAY). The loader
 * reads it on every poll: time since last_switch_ns still belongs to the task
 * in curr_*, and a running interrupt started at *_start_ns. */
struct ptt_cpu {
	__u64 last_switch_ns;   /* 0 until the loader primes the CPU */
	__u64 busy_ns;          /* non-idle tasks, interrupts excluded */
	__u64 idle_ns;          /* the idle task, interrupts excluded */
	__u64 hardirq_ns;
	__u64 softirq_ns;
	__u64 hardirqs;         /* count of hard interrupts (handlers and system vectors) */
	__u64 softirqs;
	__u64 hardirq_ns_at_switch; /* hardirq_ns at last_switch_ns */
	__u64 softirq_ns_at_switch; /* softirq_ns at last_switch_ns */
	__u64 irqs_at_switch;   /* hardirqs + softirqs at last_switch_ns */
	__u64 hardirq_start_ns; /* start of the running hardirq segment, 0 when none */
	__u64 hardirq_done_ns;  /* time of the running hardirq before a nested softirq */
	__u64 softirq_start_ns; /* start of the running softirq, 0 when none */
	__u64 hardirq_ns_at_softirq; /* hardirq_ns when the running softirq started */
	__u64 events_at_switch[ARCPROF_PTT_MAX_EVENTS];
	__u64 curr_start_ns;    /* the running task's process start (ptt_thread.start_ns) */
	__u32 hardirq_depth;
	__u32 hardirq_slot;     /* vector slot of the running hardirq */
	__u32 softirq_vec;
	__u32 curr_pid;         /* the task running since last_switch_ns */
	__u32 curr_tid;
	__u32 curr_known;       /* 1 after the first switch seen on this CPU */
	char curr_comm[ARCPROF_PTT_COMM_LEN]; /* unused by BPF (cost); the loader reads /proc */
};
#define ARCPROF_PTT_CPU_SIZE 192

/* Slots of the per-vector PERCPU_ARRAY `vectors`. */
#define ARCPROF_PTT_SOFTIRQ_BASE 0   /* + softirq vector (HI=0 .. RCU=9) */
#define ARCPROF_PTT_SYSVEC_BASE 16   /* + enum arcprof_ptt_sysvec */
#define ARCPROF_PTT_IRQ_BASE 32      /* + irq number, for irq < ARCPROF_PTT_MAX_IRQ */
#define ARCPROF_PTT_MAX_IRQ 992
#define ARCPROF_PTT_IRQ_OTHER (ARCPROF_PTT_IRQ_BASE + ARCPROF_PTT_MAX_IRQ) /* larger irq numbers */
#define ARCPROF_PTT_VECTOR_SLOTS (ARCPROF_PTT_IRQ_OTHER + 1)

/* x86 system vectors: interrupts that never reach irq_handler_entry. */
enum arcprof_ptt_sysvec {
	ARCPROF_PTT_SYSVEC_LOCAL_TIMER = 0,
	ARCPROF_PTT_SYSVEC_RESCHEDULE = 1,
	ARCPROF_PTT_SYSVEC_CALL_FUNCTION = 2,
	ARCPROF_PTT_SYSVEC_CALL_FUNCTION_SINGLE = 3,
	ARCPROF_PTT_SYSVEC_IRQ_WORK = 4,
	ARCPROF_PTT_SYSVEC_COUNT = 5,
};

struct ptt_vector {
	__u64 count;
	__u64 ns; /* handler time; softirqs exclude hardirqs nested in them */
};

/* Indexes of the per-CPU `ptt_counters` map: every drop is counted. */
enum arcprof_ptt_counter {
	ARCPROF_PTT_CTR_SWITCHES = 0,
	ARCPROF_PTT_CTR_THREADS_FULL = 1,  /* thread map full: a thread's time was dropped */
	ARCPROF_PTT_CTR_DROPPED_NS = 2,    /* nanoseconds of those threads */
	ARCPROF_PTT_CTR_EVENT_READ_ERR = 3, /* bpf_perf_event_read_value failed */
	ARCPROF_PTT_CTR_UNBALANCED_IRQ = 4, /* an exit without its entry (attached mid-interrupt) */
	ARCPROF_PTT_CTR_OPEN_HARDIRQ_AT_SWITCH = 5, /* a hardirq never exited (closed at a switch) */
	ARCPROF_PTT_CTR_OPEN_SOFTIRQ_AT_SWITCH = 6, /* a softirq never exited (closed at a switch) */
	ARCPROF_PTT_CTR_UNSEEN_SWITCH = 7, /* prev was not the task the last switch put on the CPU */
	ARCPROF_PTT_CTR_COUNT = 8,
};

#ifdef __BPF__
_Static_assert(sizeof(struct ptt_thread) == ARCPROF_PTT_THREAD_SIZE, "ptt_thread");
_Static_assert(sizeof(struct ptt_thread_key) == ARCPROF_PTT_THREAD_KEY_SIZE, "ptt_thread_key");
_Static_assert(sizeof(struct ptt_cpu) == ARCPROF_PTT_CPU_SIZE, "ptt_cpu");
_Static_assert(sizeof(struct ptt_vector) == 16, "ptt_vector");
#else
#ifdef __cplusplus
static_assert(sizeof(struct ptt_thread) == ARCPROF_PTT_THREAD_SIZE, "ptt_thread");
static_assert(sizeof(struct ptt_thread_key) == ARCPROF_PTT_THREAD_KEY_SIZE, "ptt_thread_key");
static_assert(sizeof(struct ptt_cpu) == ARCPROF_PTT_CPU_SIZE, "ptt_cpu");
static_assert(sizeof(struct ptt_vector) == 16, "ptt_vector");
#endif
#endif

#endif /* ARCPROF_BPF_PTT_H */
