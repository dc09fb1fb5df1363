/* sym_process.h - what the symbolizer keeps of one process: its mappings,
 * a reference to the parsed file of each mapped ELF file, and its JIT perf
 * map, so that its addresses still resolve after it exits. */
#ifndef MR_SYMBOLS_SYM_PROCESS_H
#define MR_SYMBOLS_SYM_PROCESS_H

#include "symbols/sym_file_cache.h"
#include "symbols/sym_perf_map.h"
#include "proc/proc_maps.h"

#include <stdint.h>

struct mr_sym_process {
	int pid;
	char *exe; /* path of its executable, as its mappings name it; NULL when unknown */
	struct mr_proc_maps maps;
	struct mr_sym_file **files; /* per mapping; NULL when not a readable ELF */
	struct mr_sym_table perf;
	int64_t perf_mtime_ns; /* identity of the perf map last loaded */
	int64_t perf_size;     /* -1 when none was loaded */
};

/* Reads the mappings of pid and takes a reference on the parsed file of
 * every executable file mapping; [vdso] is read from vdso_fd (see
 * sym_vdso.h; -1 when unavailable). Returns 0 or a negative errno. */
int mr_sym_process_snapshot(int pid, struct mr_sym_file_cache *c, int vdso_fd, struct mr_sym_process **out);
/* Drops the file references and frees the process. */
void mr_sym_process_release(struct mr_sym_process *p, struct mr_sym_file_cache *c);
/* Frees the process without touching the cache (when both go away). */
void mr_sym_process_free(struct mr_sym_process *p);
/* The parsed file behind mapping m of p, or NULL. */
struct mr_sym_file *mr_sym_process_file(const struct mr_sym_process *p, const struct mr_proc_map_entry *m);
/* The JIT symbol at addr from /tmp/perf-PID.map, reloaded when the file
 * changed; the last loaded copy answers once the file is gone. */
const char *mr_sym_process_jit(struct mr_sym_process *p, uint64_t addr, int return_address);

#endif
