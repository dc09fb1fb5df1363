/* unwind_cache.c - unwind tables by file identity, loaded into the kernel:
 * an mmap-able array map per file, filled with one copy and put into the
 * unwind_tables map of maps under a fresh id (see unwind_cache.h). */
#include "unwind/unwind_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/grow_array.h"
#include "unwind/unwind_table.h"

/* The kernel's limit on the unwind_tables map (profiler.bpf.c). */
#define MAX_TABLES 4096
/* Files remembered, with or without a table: past this, the least recently
 * used one nobody references is forgotten. */
#define MAX_ENTRIES 8192

struct mr_unwind_cache {
	int tables_fd;
	uint64_t max_bytes;
	struct mr_unwind_cached **v;
	size_t n, cap;
	uint64_t clock;
	uint32_t next_id;
	struct mr_unwind_stats stats;
};

struct mr_unwind_cache *mr_unwind_cache_new(int tables_fd, uint64_t max_bytes)
{
	struct mr_unwind_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->tables_fd = tables_fd;
	c->max_bytes = max_bytes;
	return c;
}

static void unload(struct mr_unwind_cache *c, struct mr_unwind_cached *t)
{
	if (t->fd >= 0) {
		bpf_map_delete_elem(c->tables_fd, &t->id);
		close(t->fd);
		c->stats.table_bytes -= t->bytes;
		c->stats.tables--;
	}
	free(t->segments.segs);
	free(t);
}

void mr_unwind_cache_free(struct mr_unwind_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		unload(c, c->v[i]);
	free(c->v);
	free(c);
}

/* Evicts the least recently used table nobody references; 0, or -ENOSPC. */
static int evict_one(struct mr_unwind_cache *c)
{
	size_t victim = c->n;

	for (size_t i = 0; i < c->n; i++)
		if (!c->v[i]->refs && (victim == c->n || c->v[i]->last_use < c->v[victim]->last_use))
			victim = i;
	if (victim == c->n)
		return -ENOSPC;
	unload(c, c->v[victim]);
	c->v[victim] = c->v[--c->n];
	c->stats.evicted++;
	return 0;
}

/* Map memory as the kernel accounts an mmap-able array: whole pages. */
static uint64_t map_bytes(size_t rows)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	return (rows * sizeof(struct mr_unwind_row) + page - 1) / page * page;
}

static int fill(int fd, const struct mr_unwind_table *t, uint64_t bytes)
{
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (mem == MAP_FAILED)
		return -errno;
	memcpy(mem, t->rows, t->n * sizeof(*t->rows));
	munmap(mem, bytes);
	return 0;
}

/* Puts t's rows into the kernel as entry e's table. 0 or -errno. */
static int load(struct mr_unwind_cache *c, const struct mr_unwind_table *t, struct mr_unwind_cached *e)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	uint64_t bytes = map_bytes(t->n);
	int fd, rc;

	if (bytes > c->max_bytes || t->n > MR_UNWIND_MAX_ROWS)
		return -E2BIG; /* over the bound, or past what the walker's search reaches */
	while (c->stats.table_bytes + bytes > c->max_bytes || c->stats.tables >= MAX_TABLES)
		if (evict_one(c) != 0)
			return -ENOSPC;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "mr_unwind_rows", sizeof(__u32), sizeof(struct mr_unwind_row),
			    (__u32)t->n, &opts);
	if (fd < 0)
		return -errno;
	rc = fill(fd, t, bytes);
	e->id = ++c->next_id ? c->next_id : ++c->next_id;
	if (rc == 0 && bpf_map_update_elem(c->tables_fd, &e->id, &fd, BPF_NOEXIST) != 0)
		rc = -errno;
	if (rc != 0) {
		close(fd);
		e->id = 0;
		return rc;
	}
	e->fd = fd;
	e->rows = (uint32_t)t->n;
	e->bytes = bytes;
	c->stats.tables++;
	c->stats.table_bytes += bytes;
	return 0;
}

/* Builds and loads the table of e into entry t; a file without one keeps id 0. */
static void build(struct mr_unwind_cache *c, Elf *e, struct mr_unwind_cached *t)
{
	struct mr_unwind_table *table;
	uint64_t start = mr_sys_monotonic_ns();
	int rc = mr_unwind_table_build(e, &table);

	c->stats.build_ns += mr_sys_monotonic_ns() - start;
	if (rc != 0) {
		c->stats.files_without_table++;
		return;
	}
	c->stats.built++;
	c->stats.rows += table->n;
	c->stats.unsupported_rows += table->stats.unsupported;
	if (load(c, table, t) != 0)
		c->stats.not_loaded++;
	mr_unwind_table_free(table);
}

static struct mr_unwind_cached *find(struct mr_unwind_cache *c, const char *key)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->v[i]->key, key) == 0)
			return c->v[i];
	return NULL;
}

int mr_unwind_same_file(const struct mr_unwind_file *a, const struct mr_unwind_file *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major && a->dev_minor == b->dev_minor;
}

struct mr_unwind_cached *mr_unwind_cache_hold(struct mr_unwind_cache *c, struct mr_unwind_cached *t)
{
	t->refs++;
	t->last_use = ++c->clock;
	return t;
}

struct mr_unwind_cached *mr_unwind_cache_by_file(struct mr_unwind_cache *c, const struct mr_unwind_file *file)
{
	for (size_t i = 0; i < c->n; i++) {
		if (mr_unwind_same_file(&c->v[i]->file, file)) {
			c->stats.hits++;
			return mr_unwind_cache_hold(c, c->v[i]);
		}
	}
	return NULL;
}

/* A copy of info's segments into t. 0 or -ENOMEM. */
static int keep_segments(struct mr_unwind_cached *t, const struct mr_elf_info *info)
{
	t->segments.segs = calloc(info->nsegs ? info->nsegs : 1, sizeof(*info->segs));
	if (!t->segments.segs)
		return -ENOMEM;
	memcpy(t->segments.segs, info->segs, info->nsegs * sizeof(*info->segs));
	t->segments.nsegs = info->nsegs;
	return 0;
}

struct mr_unwind_cached *mr_unwind_cache_get(struct mr_unwind_cache *c, const char *key, Elf *e,
					     const struct mr_elf_info *info,
					     const struct mr_unwind_file *file)
{
	struct mr_unwind_cached *t = find(c, key), **grown;

	if (t) {
		c->stats.hits++;
	} else {
		if (c->n >= MAX_ENTRIES && evict_one(c) != 0)
			return NULL;
		grown = mr_grow_array(c->v, &c->cap, c->n + 1, sizeof(*c->v));
		if (!grown)
			return NULL;
		c->v = grown;
		t = calloc(1, sizeof(*t));
		if (t && keep_segments(t, info) != 0) {
			free(t);
			t = NULL;
		}
		if (!t)
			return NULL;
		snprintf(t->key, sizeof(t->key), "%s", key);
		t->file = *file;
		t->fd = -1;
		build(c, e, t);
		c->v[c->n++] = t;
	}
	return mr_unwind_cache_hold(c, t);
}

void mr_unwind_cache_put(struct mr_unwind_cache *c, struct mr_unwind_cached *t)
{
	(void)c;
	if (t && t->refs)
		t->refs--;
}

void mr_unwind_cache_stats(const struct mr_unwind_cache *c, struct mr_unwind_stats *out)
{
	*out = c->stats;
}
