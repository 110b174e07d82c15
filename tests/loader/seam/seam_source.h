/* The seam test's value source, shared by its BPF and C++ halves. */
#ifndef ARCPROF_SEAM_SOURCE_H
#define ARCPROF_SEAM_SOURCE_H

/* A source id left to sources outside the tree (bpf/events.h). */
#define SEAM_SOURCE_ID 0x8001

#ifdef __BPF__
__u64 seam_lost; /* records the ring had no room for */
#endif

#endif
