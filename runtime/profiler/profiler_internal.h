/* profiler_internal.h - the profiler's state, shared by profiler.c (set-up,
 * attach, notices) and profiler_drain.c (reading counts into a profile). */
#ifndef MR_PROFILER_PROFILER_INTERNAL_H
#define MR_PROFILER_PROFILER_INTERNAL_H

#include <linux/types.h>
#include <stdint.h>

#include "api_test.h"
#include "profiler.h"

struct bpf_link;
struct ring_buffer;
struct profiler_bpf;
struct mr_profiler_cpu_clock;
struct mr_pid_table;

struct mr_profiler {
	struct mr_profiler_opts opts; /* pids not kept: they live in the targets map */
	struct profiler_bpf *skel;
	struct mr_profiler_cpu_clock *sampling;
	struct bpf_link *switch_link;
	struct bpf_link *exec_link;
	struct bpf_link *exit_link;
	struct ring_buffer *notices;
	mr_symbolizer *sym;
	struct mr_pid_table *comms; /* pid -> name (MR_COMM_LEN + 1 bytes) */
	uint64_t start_ns;
	uint64_t stacks_drained;
	uint64_t truncated_stacks; /* user stacks cut at a frame that is not code */
	int started;
};

#endif
