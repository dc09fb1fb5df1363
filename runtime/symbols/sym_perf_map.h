/* sym_perf_map.h - JIT symbols a runtime writes to /tmp/perf-PID.map, one
 * "hexstart hexsize name" line per function. */
#ifndef MR_SYMBOLS_SYM_PERF_MAP_H
#define MR_SYMBOLS_SYM_PERF_MAP_H

#include "symbols/sym_table.h"

/* Loads path into out, sorted; malformed lines are skipped. Of entries with
 * one start (reused code), the last line wins. 0 or -errno. */
int mr_sym_perf_map_load(const char *path, struct mr_sym_table *out);

#endif
