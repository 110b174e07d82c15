/* Off-CPU time (bpf/offcpu.bpf.c), shared with its loader
 * (loader/offcpu_source.cpp). At a context switch the stack of the thread
 * going off CPU is recorded once per distinct key (thread, reason, user
 * registers at the kernel entry); the time until the thread runs again is
 * summed in BPF under that key, in the offcpu_time hash map (key -> struct
 * offcpu_value). Its record (ARCPROF_SOURCE_OFFCPU) carries the key in
 * source_info.key, the syscall (pt_regs orig_ax, or -1) in source_info.arg
 * and the task's state at the switch (0: still runnable, preempted) in
 * source_info.values[0]. */
#ifndef ARCPROF_BPF_OFFCPU_H
#define ARCPROF_BPF_OFFCPU_H

#ifndef __BPF__
#include <linux/types.h>
#endif

struct offcpu_value {
	__u64 ns;    /* off CPU: from the switch out to the next switch in */
	__u64 count; /* completed off-CPU intervals */
};

#endif /* ARCPROF_BPF_OFFCPU_H */
