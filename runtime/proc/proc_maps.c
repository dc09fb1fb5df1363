/* proc_maps.c - parses /proc/PID/maps lines ("start-end perms pgoff maj:min
 * inode path") into a sorted array and finds the mapping of an address. */
#include "proc/proc_maps.h"
#include "base/grow_array.h"
#include "files/file_read.h"
#include "proc/proc_root.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DELETED_SUFFIX " (deleted)"

static int set_path(struct mr_proc_map_entry *out, const char *path)
{
	size_t len = strcspn(path, "\n");
	size_t slen = strlen(DELETED_SUFFIX);

	if (len >= slen && memcmp(path + len - slen, DELETED_SUFFIX, slen) == 0) {
		out->deleted = 1;
		len -= slen;
	}
	out->path = strndup(path, len);
	return out->path ? 0 : -ENOMEM;
}

int mr_proc_maps_parse_line(const char *line, struct mr_proc_map_entry *out)
{
	unsigned long long start, end, pgoff, inode;
	unsigned int major, minor;
	char perms[5];
	int pathpos = -1;

	memset(out, 0, sizeof(*out));
	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &major, &minor,
		   &inode, &pathpos) < 7)
		return -EINVAL;
	if (end <= start || strlen(perms) != 4)
		return -EINVAL;
	out->start = start;
	out->end = end;
	out->pgoff = pgoff;
	out->inode = inode;
	out->dev_major = major;
	out->dev_minor = minor;
	out->exec = perms[2] == 'x';
	return set_path(out, pathpos >= 0 ? line + pathpos : "");
}

static int cmp_start(const void *a, const void *b)
{
	const struct mr_proc_map_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct loader {
	struct mr_proc_maps *maps;
	size_t cap;
};

static int add_line(void *ctx, const char *line)
{
	struct loader *l = ctx;
	struct mr_proc_map_entry e;
	void *v;

	if (mr_proc_maps_parse_line(line, &e) < 0)
		return 0;
	v = mr_grow_array(l->maps->v, &l->cap, l->maps->n + 1, sizeof(e));
	if (!v) {
		free(e.path);
		return -ENOMEM;
	}
	l->maps->v = v;
	l->maps->v[l->maps->n++] = e;
	return 0;
}

static int read_lines(FILE *f, struct mr_proc_maps *out)
{
	struct loader l = { .maps = out };

	return mr_file_read_lines(f, add_line, &l);
}

int mr_proc_maps_read(int pid, struct mr_proc_maps *out)
{
	char path[PATH_MAX];
	FILE *f;
	int rc;

	out->v = NULL;
	out->n = 0;
	rc = mr_proc_path(path, sizeof(path), pid, "maps");
	if (rc != 0)
		return rc;
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	rc = read_lines(f, out);
	fclose(f);
	if (rc == 0 && out->n == 0)
		rc = -ESRCH; /* a zombie or kernel thread: nothing mapped */
	if (rc < 0) {
		mr_proc_maps_free(out);
		return rc;
	}
	qsort(out->v, out->n, sizeof(*out->v), cmp_start);
	return 0;
}

const struct mr_proc_map_entry *mr_proc_maps_find(const struct mr_proc_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < m->v[mid].start)
			hi = mid;
		else if (addr >= m->v[mid].end)
			lo = mid + 1;
		else
			return &m->v[mid];
	}
	return NULL;
}

void mr_proc_maps_free(struct mr_proc_maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}
