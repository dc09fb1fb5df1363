/* sym_process.h - what the symbolizer keeps of one process: its mappings,
 * its root directory, a reference to the parsed file of each mapping that
 * held a sampled address, and its JIT perf map, so that its addresses still
 * resolve after it exits. */
#ifndef MR_SYMBOLS_SYM_PROCESS_H
#define MR_SYMBOLS_SYM_PROCESS_H

#include "symbols/sym_file_cache.h"
#include "symbols/sym_perf_map.h"
#include "symbols/sym_roots.h"
#include "proc/proc_maps.h"

#include <stdint.h>

struct mr_sym_process {
	int pid;
	char *exe; /* path of its executable, as its mappings name it; NULL when unknown */
	struct mr_proc_maps maps;
	struct mr_sym_file **files; /* per mapping; NULL when not looked up or not a readable ELF */
	uint8_t *tried;             /* per mapping: its file was looked up */
	struct mr_sym_root *root;   /* NULL when it could not be opened */
	struct mr_sym_table perf;
	int64_t perf_mtime_ns; /* identity of the perf map last loaded */
	int64_t perf_size;     /* -1 when none was loaded */
};

/* Where mapped files are parsed: the shared cache, the vDSO image (see
 * sym_vdso.h; -1 when unavailable) and the parse budget (see
 * mr_sym_file_cache_get; NULL for none). */
struct mr_sym_loader {
	struct mr_sym_file_cache *cache;
	int vdso_fd;
	int64_t *budget;
};

/* Reads the mappings of pid and takes a reference on its root; no mapped
 * file is opened yet. Returns 0 or a negative errno. */
int mr_sym_process_snapshot(int pid, struct mr_sym_roots *roots, struct mr_sym_process **out);
/* Drops the file and root references (c may be NULL when none were taken)
 * and frees the process. */
void mr_sym_process_release(struct mr_sym_process *p, struct mr_sym_file_cache *c,
			    struct mr_sym_roots *roots);
/* Frees the process without touching the cache or the roots (when all go away). */
void mr_sym_process_free(struct mr_sym_process *p);
/* The parsed file behind mapping m of p in *out (NULL when it has none or
 * it cannot be read), looked up on first use. 0, or -EAGAIN when it needs
 * parsing and the budget is spent: ask again later. */
int mr_sym_process_file(struct mr_sym_process *p, const struct mr_proc_map_entry *m,
			const struct mr_sym_loader *l, struct mr_sym_file **out);
/* The JIT symbol at addr from /tmp/perf-PID.map, reloaded when the file
 * changed; the last loaded copy answers once the file is gone. */
const char *mr_sym_process_jit(struct mr_sym_process *p, uint64_t addr, int return_address);

#endif
