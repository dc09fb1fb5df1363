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
#include "elf/elf_file.h"
#include "unwind.h"

struct mr_unwind_cache;

/* Where a file was found mapped: device and inode (all 0 for the vDSO). */
struct mr_unwind_file {
	uint32_t dev_major;
	uint32_t dev_minor;
	uint64_t inode;
};

struct mr_unwind_cached {
	char key[160];               /* "b:BUILD-ID" or "i:DEV:INODE" */
	struct mr_unwind_file file;  /* the first file seen with this identity */
	struct mr_elf_info segments; /* its PT_LOAD segments only (segs, nsegs) */
	uint32_t id;                 /* 0: the file has no table */
	uint32_t rows;
	int fd;         /* the rows' map, -1 when none */
	uint64_t bytes; /* kernel memory of the rows' map */
	uint64_t refs;
	uint64_t last_use;
};

/* tables_fd is the profiler's unwind_tables map. */
struct mr_unwind_cache *mr_unwind_cache_new(int tables_fd, uint64_t max_bytes);
void mr_unwind_cache_free(struct mr_unwind_cache *c);
/* The table of the file with identity key, built from e (whose segments are
 * in info, found at file) when not cached, with a reference taken. NULL when
 * out of memory or every remembered file is in use. */
struct mr_unwind_cached *mr_unwind_cache_get(struct mr_unwind_cache *c, const char *key, Elf *e,
					     const struct mr_elf_info *info,
					     const struct mr_unwind_file *file);
/* The table of a file already seen at file (no need to open it again), with
 * a reference taken; NULL when none was. A file rewritten in place (same
 * inode) keeps its old table: packages replace files, giving new inodes. */
struct mr_unwind_cached *mr_unwind_cache_by_file(struct mr_unwind_cache *c,
						 const struct mr_unwind_file *file);
/* Another reference to t (from one of the functions above). */
struct mr_unwind_cached *mr_unwind_cache_hold(struct mr_unwind_cache *c, struct mr_unwind_cached *t);
void mr_unwind_cache_put(struct mr_unwind_cache *c, struct mr_unwind_cached *t);
/* Whether a and b name the same file (device and inode). */
int mr_unwind_same_file(const struct mr_unwind_file *a, const struct mr_unwind_file *b);
void mr_unwind_cache_stats(const struct mr_unwind_cache *c, struct mr_unwind_stats *out);

#endif
