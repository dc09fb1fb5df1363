/* unwinder.c - gives each announced process its unwind tables: reads
 * /proc/PID/maps, opens each executable mapping's file (through
 * /proc/PID/map_files, else /proc/PID/root; the vDSO from our own copy),
 * names it by build-id or device and inode, takes its table from the cache
 * and writes the sorted mappings, with the bias from address to file
 * address, to the kernel's unwind_processes map. */
#include "unwind/unwinder.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/grow_array.h"
#include "elf/elf_file.h"
#include "proc/proc_maps.h"
#include "proc/proc_root.h"
#include "symbols/sym_vdso.h"
#include "unwind/unwind_cache.h"
#include "unwind.h"

/* The tables one process holds references on. */
struct held {
	int32_t pid;
	struct mr_unwind_cached **v;
	size_t n;
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
	for (size_t i = 0; i < h->n; i++)
		mr_unwind_cache_put(u->cache, h->v[i]);
	free(h->v);
	h->v = NULL;
	h->n = 0;
}

/* Removes pid's references from the list without dropping them. */
static struct held take_out(struct mr_unwinder *u, int32_t pid)
{
	struct held h = { .pid = pid };

	for (size_t i = 0; i < u->nheld; i++) {
		if (u->held[i].pid == pid) {
			h = u->held[i];
			u->held[i] = u->held[--u->nheld];
			break;
		}
	}
	return h;
}

void mr_unwinder_forget(struct mr_unwinder *u, int32_t pid)
{
	for (size_t i = 0; i < u->nheld; i++) {
		if (u->held[i].pid != pid)
			continue;
		release(u, &u->held[i]);
		u->held[i] = u->held[--u->nheld];
		bpf_map_delete_elem(u->processes_fd, &pid);
		return;
	}
}

static int is_vdso(const struct mr_proc_map_entry *m)
{
	return strcmp(m->path, "[vdso]") == 0;
}

static int open_mapping(int32_t pid, const struct mr_proc_map_entry *m, int vdso_fd)
{
	char name[PATH_MAX], path[PATH_MAX];
	int fd;

	if (is_vdso(m))
		return vdso_fd >= 0 ? fcntl(vdso_fd, F_DUPFD_CLOEXEC, 0) : -ENOENT;
	snprintf(name, sizeof(name), "map_files/%" PRIx64 "-%" PRIx64, m->start, m->end);
	if (mr_proc_path(path, sizeof(path), pid, name) == 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0)
		return fd;
	if (m->deleted || snprintf(name, sizeof(name), "root%s", m->path) >= (int)sizeof(name) ||
	    mr_proc_path(path, sizeof(path), pid, name) != 0)
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

static void identity(const struct mr_proc_map_entry *m, const struct mr_elf_info *info, char *key, size_t len)
{
	char hex[2 * MR_BUILD_ID_MAX + 1];

	if (info->build_id_len) {
		mr_elf_info_build_id_hex(info, hex, sizeof(hex));
		snprintf(key, len, "b:%s", hex);
	} else {
		snprintf(key, len, "i:%u:%u:%" PRIu64, m->dev_major, m->dev_minor, m->inode);
	}
}

/* The table of mapping m's file, opened and named by its identity, with a
 * reference taken; NULL when it cannot be read or is not ELF. */
static struct mr_unwind_cached *open_table(struct mr_unwinder *u, int32_t pid,
					   const struct mr_proc_map_entry *m,
					   const struct mr_unwind_file *file)
{
	struct mr_elf_info info = { 0 };
	struct mr_unwind_cached *t = NULL;
	char key[160];
	Elf *e = NULL;
	int fd = open_mapping(pid, m, u->vdso_fd);

	if (fd >= 0 && mr_elf_open(fd, &e) == 0 && mr_elf_info_read(e, &info) == 0) {
		identity(m, &info, key, sizeof(key));
		t = mr_unwind_cache_get(u->cache, key, e, &info, file);
	}
	mr_elf_info_free(&info);
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return t;
}

/* Fills out for mapping m from its file's table (taken into h). 0, or -1
 * when the mapping has no file to unwind by (still listed: table 0). A file
 * already seen at the same device and inode is not opened again. */
static int describe(struct mr_unwinder *u, int32_t pid, const struct mr_proc_map_entry *m, struct held *h,
		    struct mr_unwind_mapping *out)
{
	struct mr_unwind_file file = { 0 };
	struct mr_unwind_cached *t;
	uint64_t vaddr;

	memset(out, 0, sizeof(*out));
	out->start = m->start;
	out->end = m->end;
	if (!is_vdso(m)) {
		if (m->path[0] != '/' || m->inode == 0)
			return -1;
		file = (struct mr_unwind_file){ m->dev_major, m->dev_minor, m->inode };
	}
	t = mr_unwind_cache_by_file(u->cache, &file);
	if (!t)
		t = open_table(u, pid, m, &file);
	if (!t)
		return -1;
	h->v[h->n++] = t;
	if (mr_elf_info_vaddr(&t->segments, is_vdso(m) ? 0 : m->pgoff, &vaddr) != 0)
		return -1; /* listed without a table: frame pointers */
	out->bias = m->start - vaddr;
	out->table = t->id;
	out->rows = t->rows;
	return 0;
}

static int fill(struct mr_unwinder *u, int32_t pid, const struct mr_proc_maps *maps, struct held *h,
		struct mr_unwind_process *proc)
{
	h->v = calloc(maps->n ? maps->n : 1, sizeof(*h->v));
	if (!h->v)
		return -ENOMEM;
	for (size_t i = 0; i < maps->n; i++) {
		if (!maps->v[i].exec)
			continue;
		if (proc->n == MR_UNWIND_MAX_MAPPINGS) {
			u->mappings_dropped++;
			continue;
		}
		describe(u, pid, &maps->v[i], h, &proc->m[proc->n++]);
	}
	return 0;
}

static int track(struct mr_unwinder *u, int32_t pid, uint64_t asked_ns)
{
	struct mr_proc_maps maps = { 0 };
	struct mr_unwind_process *proc;
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
	proc = calloc(1, sizeof(*proc));
	grown = proc ? mr_grow_array(u->held, &u->held_cap, u->nheld + 1, sizeof(*u->held)) : NULL;
	if (grown) {
		u->held = grown;
		h = &u->held[u->nheld++];
		*h = (struct held){ .pid = pid };
	}
	rc = h ? fill(u, pid, &maps, h, proc) : -ENOMEM;
	if (proc)
		proc->asked_ns = asked_ns;
	if (rc == 0 && bpf_map_update_elem(u->processes_fd, &pid, proc, BPF_ANY) != 0)
		rc = -errno;
	if (rc == 0)
		u->processes++;
	else if (h)
		mr_unwinder_forget(u, pid);
	release(u, &old);
	free(proc);
	mr_proc_maps_free(&maps);
	return rc;
}

int mr_unwinder_track(struct mr_unwinder *u, int32_t pid)
{
	return track(u, pid, 0);
}

int mr_unwinder_refresh(struct mr_unwinder *u, int32_t pid)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return track(u, pid, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}

void mr_unwinder_stats(const struct mr_unwinder *u, struct mr_unwind_stats *out)
{
	mr_unwind_cache_stats(u->cache, out);
	out->processes = u->processes;
	out->mappings_dropped = u->mappings_dropped;
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
