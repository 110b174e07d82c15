// SPDX-License-Identifier: GPL-2.0
/* Per-thread time (Performance Inspector's PTT) with interrupt time factored
 * out, and per-CPU interrupt/idle accounting (AboveIdle).
 *
 * Per CPU: the time of the last context switch and the cumulative interrupt
 * time. On each switch the outgoing task gets (wall time since it came on the
 * CPU) - (interrupt time in that span) as CPU time, the interrupt time as its
 * own column, and the deltas of up to four perf counters. The idle task's
 * share is the CPU's idle time. Everything is per CPU or per thread; the
 * loader reads the maps while recording and once at the end. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "ptt.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader between open and load: how many of event0..event3 hold
 * counters (the loader compacts available events into the first slots). */
const volatile __u32 nr_events = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ptt_cpu);
} cpu_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536); /* resized by the loader */
	__type(key, struct ptt_thread_key); /* tid and its process's start */
	__type(value, struct ptt_thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ARCPROF_PTT_VECTOR_SLOTS);
	__type(key, __u32);
	__type(value, struct ptt_vector);
} vectors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ARCPROF_PTT_CTR_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} ptt_counters SEC(".maps");

/* One per-CPU counting perf event per slot, indexed by CPU. */
#define EVENT_MAP(name)                                      \
	struct {                                             \
		__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY); \
		__uint(key_size, sizeof(__u32));             \
		__uint(value_size, sizeof(__u32));           \
	} name SEC(".maps")
EVENT_MAP(event0);
EVENT_MAP(event1);
EVENT_MAP(event2);
EVENT_MAP(event3);

static __always_inline void count(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&ptt_counters, &idx);
	if (v)
		*v += n;
}

/* A task's process start, as /proc/PID/stat's starttime counts it (the
 * leader's; an exec by another thread copies the leader's to it). */
static __always_inline __u64 process_start(struct task_struct *task)
{
	struct task_struct *leader = task->group_leader;
	return leader ? leader->start_boottime : 0;
}

static __always_inline struct ptt_cpu *this_cpu(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&cpu_state, &zero);
}

static __always_inline __u64 read_event(void *map)
{
	struct bpf_perf_event_value v = {};
	if (bpf_perf_event_read_value(map, BPF_F_CURRENT_CPU, &v, sizeof(v))) {
		count(ARCPROF_PTT_CTR_EVENT_READ_ERR, 1);
		return 0;
	}
	return v.counter;
}

static __always_inline void read_events(__u64 *vals)
{
	/* nr_events is a load-time constant: the verifier drops unused reads. */
	if (nr_events > 0)
		vals[0] = read_event(&event0);
	if (nr_events > 1)
		vals[1] = read_event(&event1);
	if (nr_events > 2)
		vals[2] = read_event(&event2);
	if (nr_events > 3)
		vals[3] = read_event(&event3);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ptt_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct ptt_cpu *c = this_cpu();
	if (!c)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u64 vals[ARCPROF_PTT_MAX_EVENTS] = {};
	read_events(vals);
	count(ARCPROF_PTT_CTR_SWITCHES, 1);
	/* No context switch happens inside an interrupt (this is not PREEMPT_RT):
	 * an interrupt still open here lost its exit, e.g. to a missed event. */
	if (c->hardirq_depth || c->softirq_start_ns) {
		count(c->hardirq_depth ? ARCPROF_PTT_CTR_OPEN_HARDIRQ_AT_SWITCH
				       : ARCPROF_PTT_CTR_OPEN_SOFTIRQ_AT_SWITCH, 1);
		c->hardirq_depth = 0;
		c->hardirq_start_ns = 0;
		c->hardirq_done_ns = 0;
		c->softirq_start_ns = 0;
	}

	if (c->curr_known) {
		/* The kernel does not report every switch (seen on a 6.18 guest:
		 * a task's switch to idle and the idle task's switch out, each
		 * missing now and then): the time since the last switch goes to
		 * `prev`, the task the kernel says was running, and the loader
		 * learns of it from this counter. */
		if (prev->pid != c->curr_tid)
			count(ARCPROF_PTT_CTR_UNSEEN_SWITCH, 1);
		__u64 hard = c->hardirq_ns - c->hardirq_ns_at_switch;
		__u64 soft = c->softirq_ns - c->softirq_ns_at_switch;
		__u64 wall = now - c->last_switch_ns;
		__u64 on_cpu = wall > hard + soft ? wall - hard - soft : 0;
		__u32 tid = prev->pid;
		if (tid == 0) {
			c->idle_ns += on_cpu;
		} else {
			c->busy_ns += on_cpu;
			struct ptt_thread_key key = {.tid = tid, .start_ns = process_start(prev)};
			struct ptt_thread *t = bpf_map_lookup_elem(&threads, &key);
			if (!t) {
				struct ptt_thread fresh = {};
				fresh.pid = prev->tgid;
				fresh.tid = tid;
				fresh.start_ns = key.start_ns;
				bpf_probe_read_kernel(fresh.comm, sizeof(fresh.comm), prev->comm);
				bpf_map_update_elem(&threads, &key, &fresh, BPF_NOEXIST);
				t = bpf_map_lookup_elem(&threads, &key);
			}
			if (t) {
				t->cpu_ns += on_cpu;
				t->hardirq_ns += hard;
				t->softirq_ns += soft;
				t->dispatches += 1;
				t->interrupts += c->hardirqs + c->softirqs - c->irqs_at_switch;
				for (int i = 0; i < ARCPROF_PTT_MAX_EVENTS; i++) {
					if (i < nr_events)
						t->events[i] += vals[i] - c->events_at_switch[i];
				}
			} else {
				count(ARCPROF_PTT_CTR_THREADS_FULL, 1);
				count(ARCPROF_PTT_CTR_DROPPED_NS, on_cpu);
			}
		}
	}

	c->last_switch_ns = now;
	c->hardirq_ns_at_switch = c->hardirq_ns;
	c->softirq_ns_at_switch = c->softirq_ns;
	c->irqs_at_switch = c->hardirqs + c->softirqs;
	for (int i = 0; i < ARCPROF_PTT_MAX_EVENTS; i++)
		c->events_at_switch[i] = vals[i];
	c->curr_pid = next->tgid;
	c->curr_tid = next->pid;
	c->curr_start_ns = process_start(next);
	c->curr_known = 1;
	return 0;
}

/* Names change at exec (and prctl, rarely); copying comm at every switch
 * cost a measurable share of the switch program, so it is copied when a
 * thread is first seen and again here. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(ptt_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	struct ptt_thread_key key = {.tid = task->pid, .start_ns = process_start(task)};
	struct ptt_thread *t = bpf_map_lookup_elem(&threads, &key);
	if (t)
		bpf_probe_read_kernel(t->comm, sizeof(t->comm), task->comm);
	return 0;
}

/* ---------------------------------------------------------------- hardirqs */

static __always_inline void hardirq_enter(__u32 slot)
{
	struct ptt_cpu *c = this_cpu();
	if (!c)
		return;
	if (c->hardirq_depth == 0) {
		c->hardirq_start_ns = bpf_ktime_get_ns();
		c->hardirq_done_ns = 0;
		c->hardirq_slot = slot;
	}
	c->hardirq_depth++;
}

static __always_inline void hardirq_exit(void)
{
	struct ptt_cpu *c = this_cpu();
	if (!c)
		return;
	if (c->hardirq_depth == 0) {
		count(ARCPROF_PTT_CTR_UNBALANCED_IRQ, 1);
		return;
	}
	if (--c->hardirq_depth > 0)
		return; /* the outermost handler gets the time */
	__u64 now = bpf_ktime_get_ns();
	__u64 d = c->hardirq_done_ns;
	if (c->hardirq_start_ns)
		d += now - c->hardirq_start_ns;
	c->hardirq_start_ns = 0;
	c->hardirq_done_ns = 0;
	c->hardirq_ns += d;
	c->hardirqs += 1;
	__u32 slot = c->hardirq_slot;
	struct ptt_vector *v = bpf_map_lookup_elem(&vectors, &slot);
	if (v) {
		v->count += 1;
		v->ns += d;
	}
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(ptt_irq_entry, int irq, struct irqaction *action)
{
	__u32 slot = (irq >= 0 && irq < ARCPROF_PTT_MAX_IRQ) ? ARCPROF_PTT_IRQ_BASE + irq
							      : ARCPROF_PTT_IRQ_OTHER;
	hardirq_enter(slot);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(ptt_irq_exit, int irq, struct irqaction *action, int ret)
{
	hardirq_exit();
	return 0;
}

/* x86 system vectors (timer, IPIs) do not pass through irq_handler_entry. The
 * loader disables the pairs this kernel lacks. */
#define SYSVEC(name, id)                                          \
	SEC("tp_btf/" #name "_entry")                             \
	int BPF_PROG(ptt_##name##_entry, int vector)               \
	{                                                         \
		hardirq_enter(ARCPROF_PTT_SYSVEC_BASE + (id));    \
		return 0;                                         \
	}                                                         \
	SEC("tp_btf/" #name "_exit")                              \
	int BPF_PROG(ptt_##name##_exit, int vector)                \
	{                                                         \
		hardirq_exit();                                   \
		return 0;                                         \
	}

SYSVEC(local_timer, ARCPROF_PTT_SYSVEC_LOCAL_TIMER)
SYSVEC(reschedule, ARCPROF_PTT_SYSVEC_RESCHEDULE)
SYSVEC(call_function, ARCPROF_PTT_SYSVEC_CALL_FUNCTION)
SYSVEC(call_function_single, ARCPROF_PTT_SYSVEC_CALL_FUNCTION_SINGLE)
SYSVEC(irq_work, ARCPROF_PTT_SYSVEC_IRQ_WORK)

/* ---------------------------------------------------------------- softirqs */

SEC("tp_btf/softirq_entry")
int BPF_PROG(ptt_softirq_entry, unsigned int vec)
{
	struct ptt_cpu *c = this_cpu();
	if (!c)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	/* A softirq run from inside a hardirq: pause the hardirq's clock so the
	 * same nanoseconds are not counted twice. */
	if (c->hardirq_depth > 0 && c->hardirq_start_ns) {
		c->hardirq_done_ns += now - c->hardirq_start_ns;
		c->hardirq_start_ns = 0;
	}
	c->softirq_start_ns = now;
	c->softirq_vec = vec;
	c->hardirq_ns_at_softirq = c->hardirq_ns;
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(ptt_softirq_exit, unsigned int vec)
{
	struct ptt_cpu *c = this_cpu();
	if (!c)
		return 0;
	if (c->softirq_start_ns == 0) {
		count(ARCPROF_PTT_CTR_UNBALANCED_IRQ, 1);
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	__u64 wall = now - c->softirq_start_ns;
	/* Hardirqs that interrupted this softirq are hardirq time. */
	__u64 nested = c->hardirq_ns - c->hardirq_ns_at_softirq;
	__u64 d = wall > nested ? wall - nested : 0;
	c->softirq_start_ns = 0;
	c->softirq_ns += d;
	c->softirqs += 1;
	if (c->hardirq_depth > 0)
		c->hardirq_start_ns = now; /* resume the paused hardirq */
	__u32 slot = ARCPROF_PTT_SOFTIRQ_BASE + (vec & 15);
	struct ptt_vector *v = bpf_map_lookup_elem(&vectors, &slot);
	if (v) {
		v->count += 1;
		v->ns += d;
	}
	return 0;
}
