/* proc_maps.h - a snapshot of the memory mappings of a process, read from
 * /proc/PID/maps, sorted by address. */
#ifndef MR_PROC_PROC_MAPS_H
#define MR_PROC_PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>

struct mr_proc_map_entry {
	uint64_t start;
	uint64_t end;
	uint64_t pgoff;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	int exec;    /* the mapping is executable */
	int deleted; /* the path ended in " (deleted)", which is stripped */
	char *path;  /* "" for anonymous memory, "[heap]" and the like as shown */
};

struct mr_proc_maps {
	struct mr_proc_map_entry *v;
	size_t n;
};

/* Reads /proc/pid/maps; malformed lines are skipped. 0, -ESRCH or -errno. */
int mr_proc_maps_read(int pid, struct mr_proc_maps *out);
/* Parses one maps line into out (path allocated). 0, -EINVAL or -ENOMEM. */
int mr_proc_maps_parse_line(const char *line, struct mr_proc_map_entry *out);
/* The mapping containing addr, or NULL. */
const struct mr_proc_map_entry *mr_proc_maps_find(const struct mr_proc_maps *m, uint64_t addr);
void mr_proc_maps_free(struct mr_proc_maps *m);

#endif
