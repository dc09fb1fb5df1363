/* sym_file_cache.h - parsed ELF files keyed by identity (build-id when present,
 * else device+inode), so that many processes of one binary cost one parse.
 * Bounded by total bytes: unreferenced files are evicted least recently used
 * first; files referenced by tracked processes are never evicted. */
#ifndef MR_SYMBOLS_SYM_FILE_CACHE_H
#define MR_SYMBOLS_SYM_FILE_CACHE_H

#include "symbols/sym_file.h"

#include <stdint.h>

struct mr_sym_file_cache;

struct mr_sym_file_cache_stats {
	uint64_t parsed; /* files whose symbols were loaded */
	uint64_t hits;   /* gets answered by an already parsed file */
};

struct mr_sym_file_cache *mr_sym_file_cache_new(size_t max_bytes);
/* Frees every file, referenced or not. */
void mr_sym_file_cache_free(struct mr_sym_file_cache *c);
/* The parsed form of the open file fd, with one reference taken for the
 * caller. root and path locate its debug file (see elf/elf_debug_file.h).
 * budget (NULL for no limit) is how many files may still be parsed: a file
 * not in the cache takes one, and gets -EAGAIN when none is left. Returns 0,
 * -ENOEXEC for a file that is not ELF, -EAGAIN, or another -errno. */
int mr_sym_file_cache_get(struct mr_sym_file_cache *c, int fd, const char *root, const char *path,
			  int64_t *budget, struct mr_sym_file **out);
void mr_sym_file_cache_ref(struct mr_sym_file *f);
/* Drops a reference; the file may be evicted once it has none. */
void mr_sym_file_cache_put(struct mr_sym_file_cache *c, struct mr_sym_file *f);
void mr_sym_file_cache_stats(const struct mr_sym_file_cache *c, struct mr_sym_file_cache_stats *out);

#endif
