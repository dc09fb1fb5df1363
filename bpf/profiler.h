/* profiler.h - structs shared by profiler.bpf.c and the runtime's profiler:
 * the aggregation key and value, the new-process notice and the drop counters. */
#ifndef MR_BPF_PROFILER_H
#define MR_BPF_PROFILER_H

#include "events.h"

#define MR_MAX_STACK_DEPTH 127

/* What a count is attributed to. A stack is named by a 64-bit hash of its
 * addresses (the key of the stacks map); 0 means it could not be taken (the
 * counters below say why) or there is none (kernel threads have no user stack).
 * tid is the thread only in per-thread profiles, else 0 (no more keys). */
struct mr_stack_key {
	__s32 pid;
	__s32 tid;
	__u64 user_stack;
	__u64 kernel_stack;
};

/* Return addresses, leaf first; unused slots are zero. */
struct mr_stack_trace {
	__u64 ips[MR_MAX_STACK_DEPTH];
};

struct mr_stack_value {
	__u64 count; /* samples, or context switches for off-CPU */
	__u64 nanos; /* blocked time for off-CPU; unused on-CPU */
};

enum mr_notice_kind {
	MR_NOTICE_NEW = 1, /* first sample of a process (or first since its exec): capture its mappings now */
	MR_NOTICE_EXIT = 2,  /* a sampled process exited: forget it once its samples are drained */
	MR_NOTICE_MAPS = 3,  /* a sampled address is outside the mappings read: read them again */
	MR_NOTICE_TABLE = 4, /* a sampled address (addr) is in a mapping whose table is not built */
};

struct mr_notice {
	__u32 kind;
	__s32 pid;
	char comm[MR_COMM_LEN];
	__u64 addr; /* MR_NOTICE_TABLE */
};

/* Kernel-side counters, read by the runtime through the skeleton's .bss. */
struct mr_profiler_counters {
	__u64 samples;
	__u64 idle_samples;
	__u64 lost_user_stack;
	__u64 lost_stack_full;   /* the stacks maps are full */
	__u64 lost_stack_nomem;  /* no kernel memory for a stack, and its spill map full */
	__u64 lost_counts_full;  /* the counts maps are full */
	__u64 lost_counts_nomem; /* no kernel memory for a count, and its spill map full */
	__u64 lost_notify;
	__u64 lost_offcpu_start;
	__u64 first_sample_ns;
	__u64 unwind_cfi_stacks; /* user stacks walked with unwind tables */
	__u64 unwind_fp_stacks;  /* user stacks walked by frame pointer: no tables for the process yet */
	__u64 unwind_fp_frames; /* frames of the former unwound by frame pointer (no table for the address) */
	__u64 unwind_truncated; /* user stacks cut at MR_MAX_STACK_DEPTH frames */
};

#endif
