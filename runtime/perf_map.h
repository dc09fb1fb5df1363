/* perf_map.h - JIT symbols a runtime writes to /tmp/perf-PID.map, one
 * "hexstart hexsize name" line per function. */
#ifndef MR_PERF_MAP_H
#define MR_PERF_MAP_H

#include "sym_buf.h"

#include <stddef.h>
#include <stdint.h>

struct mr_perf_sym {
	uint64_t start;
	uint64_t size;
	uint32_t name; /* offset in names */
};

struct mr_perf_map {
	struct mr_perf_sym *v;
	size_t n;
	struct mr_str_blob names;
};

/* Loads path; malformed lines are skipped. 0 or -errno. */
int mr_perf_map_load(const char *path, struct mr_perf_map *out);
/* The name of the nearest entry starting at or below addr when its size
 * covers addr, or NULL. Of entries with one start (reused code), the last
 * line wins. */
const char *mr_perf_map_find(const struct mr_perf_map *m, uint64_t addr);
void mr_perf_map_free(struct mr_perf_map *m);

#endif
