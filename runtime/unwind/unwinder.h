/* unwinder.h - the profiler's CFI unwinder on the runtime side: for each
 * process the kernel announces, the unwind tables of its executable
 * mappings (built once per file, unwind_cache.h) and the list of those
 * mappings, put where profiler.bpf.c's walker (bpf/unwind_walk.bpf.h) finds
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
/* Reads pid's mappings and hands them to the kernel with the tables already
 * built; the others are built when the walker first needs them
 * (mr_unwinder_load). Until then its stacks are walked by frame pointer. 0
 * or a negative errno (-ESRCH once it is gone or exiting: what was read
 * before is kept). */
int mr_unwinder_track(struct mr_unwinder *u, int32_t pid);
/* The same, building every table pid needs now (processes named up front). */
int mr_unwinder_prepare(struct mr_unwinder *u, int32_t pid);
/* The walker met addr of pid in a mapping whose table is not built: builds
 * it and gives it to every process waiting for that file. 0 or -errno. */
int mr_unwinder_load(struct mr_unwinder *u, int32_t pid, uint64_t addr);
/* The same, when the walker asked for it (an address outside the mappings
 * read): the walker asks again no sooner than a second later. */
int mr_unwinder_refresh(struct mr_unwinder *u, int32_t pid);
/* Forgets pid and drops its references on tables. */
void mr_unwinder_forget(struct mr_unwinder *u, int32_t pid);
void mr_unwinder_stats(const struct mr_unwinder *u, struct mr_unwind_stats *out);

#endif
