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
struct mr_unwinder;

/* A sampled process that exited, forgotten once its samples are drained. */
struct mr_exited_process {
	int32_t pid;
	uint64_t drain; /* drains done when its exit was noticed */
};

struct mr_profiler {
	struct mr_profiler_opts opts; /* pids not kept: they live in the targets map */
	struct profiler_bpf *skel;
	struct mr_profiler_cpu_clock *sampling;
	struct bpf_link *switch_link;
	struct bpf_link *exec_link;
	struct bpf_link *exit_link;
	struct ring_buffer *notices;
	mr_symbolizer *sym;
	struct mr_unwinder *unwind;   /* NULL when user stacks are walked by frame pointer */
	struct mr_pid_table *comms;   /* pid -> name (MR_COMM_LEN + 1 bytes) */
	struct mr_pid_table *threads; /* tid -> its pid and name (profiler_threads.c) */
	int32_t *thread_ids;          /* the tids in threads, for forgetting a process's */
	size_t nthread_ids, thread_ids_cap;
	struct mr_exited_process *exited;
	size_t nexited, exited_cap;
	uint64_t start_ns;
	uint64_t processes_seen;
	uint64_t stacks_drained;
	uint64_t truncated_stacks; /* user stacks cut at a frame that is not code */
	uint64_t deferred;         /* stacks left in the kernel for a later drain */
	uint64_t drains;           /* drains done */
	uint64_t last_deferral;    /* drains done when one last deferred a stack */
	int started;
	int stopped;
};

/* The ring-buffer callback for the kernel's process notices. */
int mr_profiler_handle_notice(void *ctx, void *data, size_t size);
/* `moonrover check`'s probe of CFI unwinding: 1 usable, 0 not, -EPERM. */
int mr_profiler_check_cfi(char *detail, size_t len);
/* Forgets the exited processes whose samples have all been drained. */
void mr_profiler_forget_exited(struct mr_profiler *p);
/* The table of thread names: 0, or -ENOMEM. */
int mr_profiler_threads_init(struct mr_profiler *p);
void mr_profiler_threads_free(struct mr_profiler *p);
/* The name of thread tid of pid, read the first time it is asked for; ""
 * when the thread was gone by then or memory is short. It moves at the next
 * call. */
const char *mr_profiler_thread_name(struct mr_profiler *p, int32_t pid, int32_t tid);
/* Forgets the names of pid's threads. */
void mr_profiler_forget_threads(struct mr_profiler *p, int32_t pid);

#endif
