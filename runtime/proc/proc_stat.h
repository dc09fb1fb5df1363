/* proc_stat.h - parsing one /proc/PID/stat line into the fields that watching
 * a process needs (the api.h functions read them for Lua). */
#ifndef MR_PROC_PROC_STAT_H
#define MR_PROC_PROC_STAT_H

#include <stddef.h>
#include <stdint.h>

/* The fields of a stat line, in the kernel's units (clock ticks, pages). */
struct mr_proc_stat_fields {
	char comm[16];
	uint64_t utime, stime; /* fields 14 and 15, clock ticks */
	int64_t threads;       /* field 20 */
	uint64_t start_ticks;  /* field 22, clock ticks since boot */
	uint64_t rss_pages;    /* field 24 */
};

/* Parses the NUL-terminated text of /proc/PID/stat. 0, or -EINVAL when it is
 * not of that form. comm may hold spaces and parentheses: the fields after it
 * begin past the last ')'. */
int mr_proc_stat_parse(const char *text, struct mr_proc_stat_fields *f);

struct mr_proc_stat;
/* Fills the api.h record of pid from its fields, with the clock ticks per
 * second and the page size. */
void mr_proc_stat_fill(struct mr_proc_stat *out, int32_t pid, const struct mr_proc_stat_fields *f, double hz,
		       uint64_t page);

#endif
