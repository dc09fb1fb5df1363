/* profiler_internal.h - the profiler's state, shared by profiler.c (set-up,
 * attach, notices) and profiler_drain.c (reading counts into a profile). */
#ifndef MR_PROFILER_INTERNAL_H
#define MR_PROFILER_INTERNAL_H

#include <linux/types.h>
#include <stdint.h>

#include "api.h"
#include "profile.h"

struct bpf_link;
struct ring_buffer;
struct profile_bpf;
struct mr_cpu_sampling;
struct mr_pid_names;

struct mr_profiler {
	struct mr_profiler_opts opts; /* pids not kept: they live in the targets map */
	struct profile_bpf *skel;
	struct mr_cpu_sampling *sampling;
	struct bpf_link *switch_link;
	struct bpf_link *exec_link;
	struct bpf_link *exit_link;
	struct ring_buffer *notices;
	mr_symbolizer *sym;
	struct mr_pid_names *names;
	uint64_t start_ns;
	uint64_t stacks_drained;
	int started;
};

#endif
