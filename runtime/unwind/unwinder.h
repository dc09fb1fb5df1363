/* unwinder.h - the profiler's CFI unwinder on the runtime side: for each
 * process the kernel announces, the unwind tables of its executable
 * mappings (built once per file, unwind_cache.h) and the list of those
 * mappings, put where profiler.bpf.c's walker (bpf/unwind_walk.h) finds
 * them. */
#ifndef MR_UNWIND_UNWINDER_H
#define MR_UNWIND_UNWINDER_H

#include <stdint.h>

#include "api.h"

struct mr_unwinder;

/* tables_fd and processes_fd are profiler.bpf.c's unwind_tables and
 * unwind_processes maps; max_bytes bounds the tables' kernel memory. */
struct mr_unwinder *mr_unwinder_new(int tables_fd, int processes_fd, uint64_t max_bytes);
void mr_unwinder_free(struct mr_unwinder *u);
/* Reads pid's mappings, loads the tables they need and hands the mappings
 * to the kernel; until then its stacks are walked by frame pointer. 0 or a
 * negative errno (-ESRCH once it is gone or exiting: what was read before
 * is kept). */
int mr_unwinder_track(struct mr_unwinder *u, int32_t pid);
/* The same, when the walker asked for it (an address outside the mappings
 * read): the walker asks again no sooner than a second later. */
int mr_unwinder_refresh(struct mr_unwinder *u, int32_t pid);
/* Forgets pid and drops its references on tables. */
void mr_unwinder_forget(struct mr_unwinder *u, int32_t pid);
void mr_unwinder_stats(const struct mr_unwinder *u, struct mr_unwind_stats *out);

#endif
