/* sym_process.c - snapshots a process for symbolization: mappings from
 * /proc/PID/maps, mapped files opened through /proc/PID/root (containers)
 * or /proc/PID/map_files (deleted or replaced files), parsed once through the
 * file cache, and the JIT perf map. */
#include "symbols/sym_process.h"
#include "api.h"
#include "proc/proc_root.h"
#include "base/string_map.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int open_via_root(int pid, const struct mr_proc_map_entry *m)
{
	char root[PATH_MAX], path[PATH_MAX];
	struct stat st;
	int n, fd;

	if (mr_proc_path(root, sizeof(root), pid, "root") != 0)
		return -ENAMETOOLONG;
	n = snprintf(path, sizeof(path), "%s%s", root, m->path);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && st.st_ino == m->inode)
		return fd;
	close(fd); /* replaced since it was mapped */
	return -ESTALE;
}

static int is_vdso(const struct mr_proc_map_entry *m)
{
	return strcmp(m->path, "[vdso]") == 0;
}

static int open_mapped(int pid, const struct mr_proc_map_entry *m, int vdso_fd)
{
	char name[64], path[PATH_MAX];
	int fd;

	if (is_vdso(m))
		return vdso_fd >= 0 ? fcntl(vdso_fd, F_DUPFD_CLOEXEC, 0) : -ENOENT;
	fd = m->deleted ? -ENOENT : open_via_root(pid, m);

	if (fd >= 0)
		return fd;
	snprintf(name, sizeof(name), "map_files/%" PRIx64 "-%" PRIx64, m->start, m->end);
	if (mr_proc_path(path, sizeof(path), pid, name) != 0)
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

static struct mr_sym_file *load_mapped(int pid, const struct mr_proc_map_entry *m,
				       struct mr_sym_file_cache *c, int vdso_fd)
{
	char root[PATH_MAX];
	struct mr_sym_file *f = NULL;
	int fd = open_mapped(pid, m, vdso_fd);

	if (fd < 0 || mr_proc_path(root, sizeof(root), pid, "root") != 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (mr_sym_file_cache_get(c, fd, root, m->path, &f) < 0)
		f = NULL;
	close(fd);
	return f;
}

static void file_key(const struct mr_proc_map_entry *m, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu32 ":%" PRIu32 ":%" PRIu64, m->dev_major, m->dev_minor, m->inode);
}

static int is_file(const struct mr_proc_map_entry *m)
{
	return (m->path[0] == '/' && m->inode != 0) || is_vdso(m);
}

/* Executable mappings first (parsing their files), then the other mappings
 * of the same files share them. */
static void attach_files(struct mr_sym_process *p, struct mr_sym_file_cache *c, struct mr_string_map *seen,
			 int vdso_fd)
{
	char key[64];
	struct mr_sym_file *f;

	for (int pass = 0; pass < 2; pass++) {
		int want_exec = pass == 0;

		for (size_t i = 0; i < p->maps.n; i++) {
			const struct mr_proc_map_entry *m = &p->maps.v[i];

			if (!is_file(m) || m->exec != want_exec)
				continue;
			file_key(m, key, sizeof(key));
			f = mr_string_map_get(seen, key);
			if (f)
				mr_sym_file_cache_ref(f);
			else if (pass == 0 && (f = load_mapped(p->pid, m, c, vdso_fd)) != NULL &&
				 mr_string_map_put(seen, key, f) < 0) {
				mr_sym_file_cache_put(c, f);
				f = NULL;
			}
			p->files[i] = f;
		}
	}
}

static void reload_perf_map(struct mr_sym_process *p)
{
	char path[64];
	struct stat st;
	struct mr_sym_table fresh;
	int64_t mtime;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", p->pid);
	if (stat(path, &st) < 0)
		return;
	mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if (st.st_size == p->perf_size && mtime == p->perf_mtime_ns)
		return;
	if (mr_sym_perf_map_load(path, &fresh) < 0)
		return;
	mr_sym_table_free(&p->perf);
	p->perf = fresh;
	p->perf_size = st.st_size;
	p->perf_mtime_ns = mtime;
}

/* The executable's path as /proc/PID/maps shows it (without " (deleted)"). */
static char *exe_path(int pid)
{
	static const char deleted[] = " (deleted)";
	char buf[PATH_MAX];
	int32_t n = mr_proc_link(pid, "exe", buf, sizeof(buf), NULL, 0);
	size_t dlen = sizeof(deleted) - 1;

	if (n <= 0)
		return NULL;
	if ((size_t)n > dlen && strcmp(buf + n - dlen, deleted) == 0)
		buf[n - dlen] = '\0';
	return strdup(buf);
}

int mr_sym_process_snapshot(int pid, struct mr_sym_file_cache *c, int vdso_fd, struct mr_sym_process **out)
{
	struct mr_sym_process *p = calloc(1, sizeof(*p));
	struct mr_string_map *seen = NULL;
	int rc;

	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->perf_size = -1;
	p->exe = exe_path(pid);
	rc = mr_proc_maps_read(pid, &p->maps);
	if (rc == 0) {
		p->files = calloc(p->maps.n, sizeof(*p->files));
		seen = mr_string_map_new(NULL);
		rc = p->files && seen ? 0 : -ENOMEM;
	}
	if (rc == 0)
		attach_files(p, c, seen, vdso_fd);
	mr_string_map_free(seen);
	if (rc < 0) {
		mr_sym_process_free(p);
		return rc;
	}
	reload_perf_map(p);
	*out = p;
	return 0;
}

void mr_sym_process_release(struct mr_sym_process *p, struct mr_sym_file_cache *c)
{
	if (!p)
		return;
	for (size_t i = 0; p->files && i < p->maps.n; i++) {
		if (p->files[i])
			mr_sym_file_cache_put(c, p->files[i]);
	}
	mr_sym_process_free(p);
}

void mr_sym_process_free(struct mr_sym_process *p)
{
	if (!p)
		return;
	mr_proc_maps_free(&p->maps);
	mr_sym_table_free(&p->perf);
	free(p->exe);
	free(p->files);
	free(p);
}

struct mr_sym_file *mr_sym_process_file(const struct mr_sym_process *p, const struct mr_proc_map_entry *m)
{
	return p->files[m - p->maps.v];
}

const char *mr_sym_process_jit(struct mr_sym_process *p, uint64_t addr, int return_address)
{
	reload_perf_map(p);
	return return_address ? mr_sym_table_find_return(&p->perf, addr) : mr_sym_table_find(&p->perf, addr);
}
