/* unwind_cache.h - the unwind tables loaded into the kernel, one per file
 * identity (build-id, else device and inode), shared by every process that
 * maps the file. Each is an array map inside the profiler's unwind_tables
 * map, named by an id. Bounded by bytes: tables no tracked process uses are
 * evicted least recently used first; past the bound a file gets none (its
 * frames are walked by frame pointer) and that is counted. */
#ifndef MR_UNWIND_UNWIND_CACHE_H
#define MR_UNWIND_UNWIND_CACHE_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "unwind.h"

struct mr_unwind_cache;

struct mr_unwind_cached {
	char key[160]; /* "b:BUILD-ID" or "i:DEV:INODE" */
	uint32_t id;   /* 0: the file has no table */
	uint32_t rows;
	int fd;         /* the rows' map, -1 when none */
	uint64_t bytes; /* kernel memory of the rows' map */
	uint64_t refs;
	uint64_t last_use;
};

/* tables_fd is the profiler's unwind_tables map. */
struct mr_unwind_cache *mr_unwind_cache_new(int tables_fd, uint64_t max_bytes);
void mr_unwind_cache_free(struct mr_unwind_cache *c);
/* The table of the file with identity key, built from e when not cached,
 * with a reference taken. NULL when out of memory or every remembered
 * file is in use. */
struct mr_unwind_cached *mr_unwind_cache_get(struct mr_unwind_cache *c, const char *key, Elf *e);
void mr_unwind_cache_put(struct mr_unwind_cache *c, struct mr_unwind_cached *t);
void mr_unwind_cache_stats(const struct mr_unwind_cache *c, struct mr_unwind_stats *out);

#endif
