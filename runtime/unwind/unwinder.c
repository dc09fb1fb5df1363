/* unwinder.c - gives each announced process its unwind tables: reads
 * /proc/PID/maps and writes the sorted executable mappings, with the bias
 * from address to file address and their file's table, to the kernel's
 * unwind_processes map. A table already built is used at once; one not built
 * yet is built when the walker first meets its file (a notice: most files a
 * process maps are never sampled), or at once for processes named up front.
 * Each process keeps its mappings and the kernel's copy of its list, so that
 * a table built later is put into every process that maps its file. */
#include "unwind/unwinder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/grow_array.h"
#include "proc/proc_maps.h"
#include "symbols/sym_vdso.h"
#include "unwind/unwind_cache.h"
#include "unwind/unwind_source.h"
#include "unwind.h"

/* One tracked process: its list as the kernel has it, and per entry the
 * mapping it came from (path owned) and the table referenced (NULL: none). */
struct held {
	int32_t pid;
	struct mr_unwind_process *proc;
	struct mr_proc_map_entry *maps;
	struct mr_unwind_cached **tables;
};

/* Processes come and go at the rate of notices, not samples: a plain array. */
struct mr_unwinder {
	struct mr_unwind_cache *cache;
	int processes_fd;
	int vdso_fd;
	struct held *held;
	size_t nheld, held_cap;
	uint64_t processes;
	uint64_t mappings_dropped;
	uint64_t built_on_demand;
};

struct mr_unwinder *mr_unwinder_new(int tables_fd, int processes_fd, uint64_t max_bytes)
{
	struct mr_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->processes_fd = processes_fd;
	u->vdso_fd = mr_sym_vdso_memfd();
	u->cache = mr_unwind_cache_new(tables_fd, max_bytes);
	if (!u->cache || elf_version(EV_CURRENT) == EV_NONE) {
		mr_unwinder_free(u);
		return NULL;
	}
	return u;
}

static void release(struct mr_unwinder *u, struct held *h)
{
	for (uint32_t i = 0; h->proc && i < h->proc->n; i++) {
		mr_unwind_cache_put(u->cache, h->tables[i]);
		free(h->maps[i].path);
	}
	free(h->tables);
	free(h->maps);
	free(h->proc);
	memset(h, 0, sizeof(*h));
}

static struct held *find(struct mr_unwinder *u, int32_t pid)
{
	for (size_t i = 0; i < u->nheld; i++)
		if (u->held[i].pid == pid)
			return &u->held[i];
	return NULL;
}

/* Removes pid from the list without dropping its references. */
static struct held take_out(struct mr_unwinder *u, int32_t pid)
{
	struct held *h = find(u, pid), out = { .pid = pid };

	if (h) {
		out = *h;
		*h = u->held[--u->nheld];
	}
	return out;
}

void mr_unwinder_forget(struct mr_unwinder *u, int32_t pid)
{
	struct held h = take_out(u, pid);

	if (!h.proc)
		return;
	release(u, &h);
	bpf_map_delete_elem(u->processes_fd, &pid);
}

/* Entry i of h takes table t (its reference with it). */
static void set_table(struct held *h, uint32_t i, struct mr_unwind_cached *t)
{
	struct mr_unwind_mapping *m = &h->proc->m[i];
	const struct mr_proc_map_entry *e = &h->maps[i];
	uint64_t vaddr;

	h->tables[i] = t;
	m->table = 0;
	m->rows = 0;
	if (!t || mr_elf_info_vaddr(&t->segments, mr_unwind_source_is_vdso(e) ? 0 : e->pgoff, &vaddr) != 0)
		return; /* frame pointers there */
	m->bias = e->start - vaddr;
	m->table = t->id;
	m->rows = t->rows;
}

/* Entry i for mapping e: its table if built (or built now when eager), else
 * pending (the walker asks when it meets it). 0 or -ENOMEM. */
static int describe(struct mr_unwinder *u, struct held *h, uint32_t i, const struct mr_proc_map_entry *e,
		    int eager)
{
	struct mr_unwind_file file = mr_unwind_source_file(e);
	struct mr_unwind_cached *t = NULL;

	h->maps[i] = *e;
	h->maps[i].path = strdup(e->path);
	if (!h->maps[i].path)
		return -ENOMEM;
	h->proc->m[i] = (struct mr_unwind_mapping){ .start = e->start, .end = e->end };
	if (!mr_unwind_source_has_file(e))
		return 0;
	t = eager ? mr_unwind_source_open(u->cache, h->pid, e, u->vdso_fd)
		  : mr_unwind_cache_by_file(u->cache, &file);
	if (t || eager)
		set_table(h, i, t);
	else
		h->proc->m[i].table = MR_UNWIND_TABLE_PENDING;
	return 0;
}

static int fill(struct mr_unwinder *u, struct held *h, const struct mr_proc_maps *maps, int eager)
{
	int rc = 0;

	h->proc = calloc(1, sizeof(*h->proc));
	h->maps = calloc(maps->n ? maps->n : 1, sizeof(*h->maps));
	h->tables = calloc(maps->n ? maps->n : 1, sizeof(*h->tables));
	if (!h->proc || !h->maps || !h->tables)
		return -ENOMEM;
	for (size_t i = 0; rc == 0 && i < maps->n; i++) {
		if (!maps->v[i].exec)
			continue;
		if (h->proc->n == MR_UNWIND_MAX_MAPPINGS) {
			u->mappings_dropped++;
			continue;
		}
		rc = describe(u, h, h->proc->n, &maps->v[i], eager);
		h->proc->n++;
	}
	return rc;
}

static int write_process(struct mr_unwinder *u, const struct held *h)
{
	return bpf_map_update_elem(u->processes_fd, &h->pid, h->proc, BPF_ANY) == 0 ? 0 : -errno;
}

static int track(struct mr_unwinder *u, int32_t pid, uint64_t asked_ns, int eager)
{
	struct mr_proc_maps maps = { 0 };
	struct held *grown, *h = NULL, old;
	int rc = mr_proc_maps_read(pid, &maps);

	if (rc == 0 && maps.n == 0)
		rc = -ESRCH; /* exiting (its memory is gone already), or a kernel thread */
	if (rc != 0) {
		mr_proc_maps_free(&maps);
		return rc;
	}
	/* Its earlier tables (before an exec, or a library load) are released
	 * once the new mappings replace the old in the kernel, not before:
	 * its samples meanwhile are still unwound by the old ones. */
	old = take_out(u, pid);
	grown = mr_grow_array(u->held, &u->held_cap, u->nheld + 1, sizeof(*u->held));
	if (grown) {
		u->held = grown;
		h = &u->held[u->nheld++];
		*h = (struct held){ .pid = pid };
	}
	rc = h ? fill(u, h, &maps, eager) : -ENOMEM;
	if (rc == 0) {
		h->proc->asked_ns = asked_ns;
		rc = write_process(u, h);
	}
	if (rc == 0)
		u->processes++;
	else if (h)
		mr_unwinder_forget(u, pid);
	release(u, &old);
	mr_proc_maps_free(&maps);
	return rc;
}

int mr_unwinder_track(struct mr_unwinder *u, int32_t pid)
{
	return track(u, pid, 0, 0);
}

int mr_unwinder_prepare(struct mr_unwinder *u, int32_t pid)
{
	return track(u, pid, 0, 1);
}

int mr_unwinder_refresh(struct mr_unwinder *u, int32_t pid)
{
	return track(u, pid, mr_sys_monotonic_ns(), 0);
}

/* Puts t, the table now built for file, into every entry of h still waiting
 * for that file (each entry holds a reference); whether any was. t is given
 * as found: a table matched by build-id may have been built from another
 * file (the same library in two container layers). */
static int give(struct mr_unwinder *u, struct held *h, const struct mr_unwind_file *file,
		struct mr_unwind_cached *t)
{
	struct mr_unwind_file f;
	int given = 0;

	for (uint32_t i = 0; i < h->proc->n; i++) {
		if (h->proc->m[i].table != MR_UNWIND_TABLE_PENDING)
			continue;
		f = mr_unwind_source_file(&h->maps[i]);
		if (!mr_unwind_same_file(&f, file))
			continue;
		set_table(h, i, mr_unwind_cache_hold(u->cache, t));
		given = 1;
	}
	return given;
}

int mr_unwinder_load(struct mr_unwinder *u, int32_t pid, uint64_t addr)
{
	struct held *h = find(u, pid);
	struct mr_unwind_cached *t;
	struct mr_unwind_file file;
	uint32_t i = 0;

	while (h && i < h->proc->n && !(h->maps[i].start <= addr && addr < h->maps[i].end))
		i++;
	if (!h || i == h->proc->n || h->proc->m[i].table != MR_UNWIND_TABLE_PENDING)
		return 0; /* gone, re-read, or given meanwhile */
	file = mr_unwind_source_file(&h->maps[i]);
	t = mr_unwind_source_open(u->cache, pid, &h->maps[i], u->vdso_fd);
	if (!t) {
		set_table(h, i, NULL); /* cannot be read: frame pointers there */
		return write_process(u, h);
	}
	u->built_on_demand++;
	/* A process that is gone meanwhile cannot be written: its exit
	 * notice forgets it. */
	for (size_t k = 0; k < u->nheld; k++)
		if (give(u, &u->held[k], &file, t))
			(void)write_process(u, &u->held[k]);
	mr_unwind_cache_put(u->cache, t);
	return 0;
}

void mr_unwinder_stats(const struct mr_unwinder *u, struct mr_unwind_stats *out)
{
	mr_unwind_cache_stats(u->cache, out);
	out->processes = u->processes;
	out->mappings_dropped = u->mappings_dropped;
	out->built_on_demand = u->built_on_demand;
}

void mr_unwinder_free(struct mr_unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nheld; i++)
		release(u, &u->held[i]);
	free(u->held);
	mr_unwind_cache_free(u->cache);
	if (u->vdso_fd >= 0)
		close(u->vdso_fd);
	free(u);
}
