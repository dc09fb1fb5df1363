/* perf_map.c - parses perf JIT map files and looks addresses up in them. */
#include "perf_map.h"
#include "growarray.h"
#include "line_reader.h"
#include "sorted_find.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct loader {
	struct mr_perf_map *m;
	size_t cap;
};

static int add_line(void *ctx, const char *line)
{
	struct loader *l = ctx;
	struct mr_perf_map *m = l->m;
	unsigned long long start, size;
	int name_pos = -1;
	size_t len;
	void *v;
	int rc;

	if (sscanf(line, "%llx %llx %n", &start, &size, &name_pos) < 2 || name_pos < 0 || size == 0)
		return 0;
	len = strcspn(line + name_pos, "\n");
	if (len == 0)
		return 0;
	v = grow_array(m->v, &l->cap, m->n + 1, sizeof(*m->v));
	if (!v)
		return -ENOMEM;
	m->v = v;
	rc = mr_str_blob_add(&m->names, line + name_pos, len, &m->v[m->n].name);
	if (rc < 0)
		return rc;
	m->v[m->n].start = start;
	m->v[m->n].size = size;
	m->n++;
	return 0;
}

/* By start; for equal starts the later line (higher name offset) first. */
static int cmp_perf_sym(const void *a, const void *b)
{
	const struct mr_perf_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->name > y->name ? -1 : x->name < y->name;
}

int mr_perf_map_load(const char *path, struct mr_perf_map *out)
{
	FILE *f = fopen(path, "re");
	struct loader l = { .m = out };
	int rc;

	memset(out, 0, sizeof(*out));
	if (!f)
		return -errno;
	rc = mr_read_lines(f, add_line, &l);
	fclose(f);
	if (rc < 0) {
		mr_perf_map_free(out);
		return rc;
	}
	qsort(out->v, out->n, sizeof(*out->v), cmp_perf_sym);
	return 0;
}

const char *mr_perf_map_find(const struct mr_perf_map *m, uint64_t addr)
{
	size_t i = mr_floor_index(m->v, m->n, sizeof(*m->v), addr);
	const struct mr_perf_sym *s = &m->v[i];

	return i < m->n && addr - s->start < s->size ? m->names.data + s->name : NULL;
}

void mr_perf_map_free(struct mr_perf_map *m)
{
	free(m->v);
	mr_str_blob_free(&m->names);
	memset(m, 0, sizeof(*m));
}
