/* unwind_source.h - where a mapping's unwind table comes from: the mapped
 * file, opened through /proc/PID/map_files (else /proc/PID/root; the vDSO
 * from moonrover's own copy), named by build-id or device and inode, and
 * looked up or built in the cache. */
#ifndef MR_UNWIND_UNWIND_SOURCE_H
#define MR_UNWIND_UNWIND_SOURCE_H

#include <stdint.h>

#include "proc/proc_maps.h"
#include "unwind/unwind_cache.h"

int mr_unwind_source_is_vdso(const struct mr_proc_map_entry *m);
/* Whether m is backed by a file a table can come from (a path with an inode, or the vDSO). */
int mr_unwind_source_has_file(const struct mr_proc_map_entry *m);
/* The device and inode of m's file (all 0 for the vDSO). */
struct mr_unwind_file mr_unwind_source_file(const struct mr_proc_map_entry *m);
/* The table of m's file in process pid, built when the cache has none, with
 * a reference taken; NULL when the file cannot be read or is not ELF. */
struct mr_unwind_cached *mr_unwind_source_open(struct mr_unwind_cache *c, int32_t pid,
					       const struct mr_proc_map_entry *m, int vdso_fd);

#endif
