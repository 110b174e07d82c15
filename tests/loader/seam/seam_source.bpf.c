// SPDX-License-Identifier: GPL-2.0
/* The seam test's value source (not shipped): every seam_event() call of a
 * recorded process writes its user stack with one call as a stack record into the
 * sampler's ring, through the sampler's filter (bpf/stack_record.bpf.h). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "events.h"
#define ARCPROF_RECORD_OWN_SCRATCH
#include "stack_record.bpf.h"

#include "seam_source.h"

char LICENSE[] SEC("license") = "GPL";

/* A uprobe on seam_event() (tests/loader/seam/seam_child.c), attached by the
 * loader half. It runs preemptible and the sampler may interrupt it: it
 * builds its records in a scratch buffer of its own (bpf/stack_record.bpf.h). */
SEC("uprobe")
int on_seam_event(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	if (!targeted(tgid))
		return 0;
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 *busy;
	struct scratch_buf *buf = take_scratch(cpu, &busy);
	if (!buf) {
		seam_lost++;
		return 0;
	}
	struct source_info *info = (struct source_info *)(buf->data + ARCPROF_SAMPLE_HEADER_SIZE);
	info->key = 0;
	info->source = SEAM_SOURCE_ID;
	info->arg = 0;
	info->values[0] = 1; /* one call */
	info->values[1] = 0;
	if (emit_record(ctx, buf->data, tgid, (__u32)id, cpu, ARCPROF_SAMPLE_SOURCE,
			ARCPROF_SOURCE_INFO_SIZE, 0))
		seam_lost++;
	give_scratch(busy);
	return 0;
}
