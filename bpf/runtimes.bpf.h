/* What every interpreted runtime's BPF side shares (runtimes/, bpf/runtimes.h):
 * the recognized processes, a per-CPU scratch buffer, and the dispatch from a
 * sample to its runtime's walker (included by sample.bpf.c). */
#ifndef ARCPROF_BPF_RUNTIMES_BPF_H
#define ARCPROF_BPF_RUNTIMES_BPF_H

#include "runtimes.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tgid */
	__type(value, struct runtime_proc);
} runtime_procs SEC(".maps");

struct rt_scratch_buf {
	__u8 data[ARCPROF_PY_FRAME_READ + 64 > ARCPROF_V8_SCAN_BYTES ? ARCPROF_PY_FRAME_READ + 64 : ARCPROF_V8_SCAN_BYTES];
	__u32 size;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rt_scratch_buf);
} rt_scratch SEC(".maps");

static __always_inline __u64 read_u64(__u64 addr)
{
	__u64 v = 0;
	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

static __always_inline __u64 field_u64(const __u8 *buf, __u16 off)
{
	return *(const __u64 *)(buf + (off & 127));
}

#include "python.bpf.h"
#include "v8.bpf.h"

/* Writes the runtime block at data + off (a header and the frames) when the
 * sampled process is a recognized runtime; returns its size, 0 otherwise. */
static __always_inline __u32 read_runtime_frames(__u8 *data, __u32 off, struct task_struct *task,
						  __u32 tgid, __u32 tid, __u16 *flags)
{
	struct runtime_proc *rp = bpf_map_lookup_elem(&runtime_procs, &tgid);
	if (!rp)
		return 0;
	if (rp->runtime == ARCPROF_RUNTIME_PYTHON)
		return read_python_frames(data, off, task, tgid, tid, rp, flags);
	if (rp->runtime == ARCPROF_RUNTIME_V8)
		return read_v8_frames(data, off, task, rp, flags);
	return 0;
}

#endif /* ARCPROF_BPF_RUNTIMES_BPF_H */
