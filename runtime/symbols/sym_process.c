/* sym_process.c - what the symbolizer knows of one process: its mappings,
 * read from /proc/PID/maps when it is first seen, its root directory, and
 * the parsed file behind a mapping, looked up only when an address in that
 * mapping needs a name (through the held root, so after the process exited
 * too, or /proc/PID/map_files for deleted files), and its JIT perf map. */
#include "symbols/sym_process.h"
#include "api.h"
#include "proc/proc_root.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Opens the mapped file m->path below the directory root (AT_FDCWD: ours),
 * if it is still the file that was mapped. In our root, a file of the same
 * path may be another one (a container's libc): its device must match too. */
static int open_below(int root, const struct mr_proc_map_entry *m)
{
	struct stat st;
	int ours = root == AT_FDCWD;
	int fd = openat(root, ours ? m->path : m->path + 1, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && st.st_ino == m->inode &&
	    (!ours || st.st_dev == makedev(m->dev_major, m->dev_minor)))
		return fd;
	close(fd); /* replaced since it was mapped */
	return -ESTALE;
}

static int is_vdso(const struct mr_proc_map_entry *m)
{
	return strcmp(m->path, "[vdso]") == 0;
}

static int open_mapped(const struct mr_sym_process *p, const struct mr_proc_map_entry *m, int vdso_fd)
{
	char name[64], path[PATH_MAX];
	int fd;

	if (is_vdso(m))
		return vdso_fd >= 0 ? fcntl(vdso_fd, F_DUPFD_CLOEXEC, 0) : -ENOENT;
	if (m->deleted)
		fd = -ENOENT;
	else if ((fd = p->root ? open_below(p->root->fd, m) : -ENOENT) < 0)
		/* A chroot in our mount namespace: the kernel names its files
		 * as we see them. Also the way in when the root is unknown. */
		fd = open_below(AT_FDCWD, m);
	if (fd >= 0)
		return fd;
	snprintf(name, sizeof(name), "map_files/%" PRIx64 "-%" PRIx64, m->start, m->end);
	if (mr_proc_path(path, sizeof(path), p->pid, name) != 0)
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

static int is_file(const struct mr_proc_map_entry *m)
{
	return (m->path[0] == '/' && m->inode != 0) || is_vdso(m);
}

static int same_file(const struct mr_proc_map_entry *a, const struct mr_proc_map_entry *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       strcmp(a->path, b->path) == 0;
}

/* Another mapping of the same file whose parsed form is already attached. */
static struct mr_sym_file *attached_twin(const struct mr_sym_process *p, size_t i)
{
	for (size_t j = 0; j < p->maps.n; j++) {
		if (j != i && p->files[j] && same_file(&p->maps.v[i], &p->maps.v[j]))
			return p->files[j];
	}
	return NULL;
}

/* Opens and parses (or finds in the cache) the file of mapping i. */
static int attach(struct mr_sym_process *p, size_t i, const struct mr_sym_loader *l)
{
	const struct mr_proc_map_entry *m = &p->maps.v[i];
	struct mr_sym_file *f = attached_twin(p, i);
	int fd, rc;

	if (f) {
		mr_sym_file_cache_ref(f);
		p->files[i] = f;
		return 0;
	}
	fd = open_mapped(p, m, l->vdso_fd);
	if (fd < 0)
		return fd;
	rc = mr_sym_file_cache_get(l->cache, fd, p->root ? p->root->path : "", m->path, l->budget, &f);
	close(fd);
	if (rc == 0)
		p->files[i] = f;
	return rc;
}

int mr_sym_process_file(struct mr_sym_process *p, const struct mr_proc_map_entry *m,
			const struct mr_sym_loader *l, struct mr_sym_file **out)
{
	size_t i = (size_t)(m - p->maps.v);
	int rc = 0;

	if (!p->tried[i] && is_file(m)) {
		rc = attach(p, i, l);
		if (rc == -EAGAIN)
			return rc; /* not now: no parse allowed */
	}
	p->tried[i] = 1;
	*out = p->files[i];
	return 0;
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

int mr_sym_process_snapshot(int pid, struct mr_sym_roots *roots, struct mr_sym_process **out)
{
	struct mr_sym_process *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->perf_size = -1;
	p->exe = exe_path(pid);
	if (mr_sym_roots_get(roots, pid, &p->root) < 0)
		p->root = NULL; /* gone already: only map_files, while it lasts */
	rc = mr_proc_maps_read(pid, &p->maps);
	if (rc == 0) {
		p->files = calloc(p->maps.n ? p->maps.n : 1, sizeof(*p->files));
		p->tried = calloc(p->maps.n ? p->maps.n : 1, sizeof(*p->tried));
		rc = p->files && p->tried ? 0 : -ENOMEM;
	}
	if (rc < 0) {
		mr_sym_process_release(p, NULL, roots);
		return rc;
	}
	reload_perf_map(p);
	*out = p;
	return 0;
}

void mr_sym_process_release(struct mr_sym_process *p, struct mr_sym_file_cache *c, struct mr_sym_roots *roots)
{
	if (!p)
		return;
	for (size_t i = 0; c && p->files && i < p->maps.n; i++) {
		if (p->files[i])
			mr_sym_file_cache_put(c, p->files[i]);
	}
	mr_sym_roots_put(roots, p->root);
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
	free(p->tried);
	free(p);
}

const char *mr_sym_process_jit(struct mr_sym_process *p, uint64_t addr, int return_address)
{
	reload_perf_map(p);
	return return_address ? mr_sym_table_find_return(&p->perf, addr) : mr_sym_table_find(&p->perf, addr);
}
