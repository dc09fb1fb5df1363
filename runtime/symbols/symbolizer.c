/* symbolizer.c - the public symbolizer (see api.h): tracked processes, user,
 * JIT, kernel and file address resolution, interned result strings and
 * statistics. */
#include "api_test.h"
#include "base/log.h"
#include "symbols/sym_file_cache.h"
#include "symbols/sym_kallsyms.h"
#include "symbols/sym_demangle.h"
#include "base/string_map.h"
#include "symbols/sym_process.h"
#include "symbols/sym_vdso.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CACHE_MAX_BYTES ((size_t)256 << 20)
#define KALLSYMS_PATH "/proc/kallsyms"

enum ksyms_state { KSYMS_UNLOADED, KSYMS_LOADED, KSYMS_FAILED };

struct mr_symbolizer {
	int kernel;
	enum ksyms_state ksyms_state;
	struct mr_sym_table ksyms;
	struct mr_sym_file_cache *cache;
	struct mr_sym_roots *roots;    /* root directories of tracked processes */
	struct mr_string_map *procs;   /* "pid" -> struct mr_sym_process */
	struct mr_string_map *strings; /* interned result strings */
	struct mr_string_map *names;   /* mangled name -> interned demangled name */
	int vdso_fd;                   /* the vDSO image, -1 when unavailable */
	int64_t parse_budget;          /* files that may still be parsed; -1: no limit */
	uint64_t maps_reads;
	uint64_t unresolved;
	uint64_t not_code;
};

static void free_process(void *p)
{
	mr_sym_process_free(p);
}

mr_symbolizer *mr_symbolizer_new(int32_t kernel, char *err, size_t errlen)
{
	mr_symbolizer *s;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		return mr_fail_null(
			mr_error(err, errlen, -ENOSYS, "libelf does not work here: %s", elf_errmsg(-1)));
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		return mr_fail_null(mr_error(err, errlen, -ENOMEM, "out of memory for a symbolizer"));
	}
	s->kernel = kernel != 0;
	s->vdso_fd = mr_sym_vdso_memfd();
	s->parse_budget = -1;
	s->roots = mr_sym_roots_new();
	s->cache = mr_sym_file_cache_new(CACHE_MAX_BYTES);
	s->procs = mr_string_map_new(free_process);
	s->strings = mr_string_map_new(NULL);
	s->names = mr_string_map_new(NULL);
	if (!s->roots || !s->cache || !s->procs || !s->strings || !s->names) {
		mr_symbolizer_free(s);
		return mr_fail_null(mr_error(err, errlen, -ENOMEM, "out of memory for a symbolizer"));
	}
	return s;
}

void mr_symbolizer_free(mr_symbolizer *s)
{
	if (!s)
		return;
	mr_string_map_free(s->procs); /* before the cache and roots: no references dropped */
	mr_sym_file_cache_free(s->cache);
	mr_sym_roots_free(s->roots);
	mr_string_map_free(s->names);
	mr_string_map_free(s->strings);
	mr_sym_table_free(&s->ksyms);
	if (s->vdso_fd >= 0)
		close(s->vdso_fd);
	free(s);
}

static void pid_key(int32_t pid, char *buf, size_t len)
{
	snprintf(buf, len, "%d", (int)pid);
}

static struct mr_sym_process *find_process(const mr_symbolizer *s, int32_t pid)
{
	char key[16];

	pid_key(pid, key, sizeof(key));
	return mr_string_map_get(s->procs, key);
}

int mr_symbolizer_track(mr_symbolizer *s, int32_t pid, char *err, size_t errlen)
{
	struct mr_sym_process *p, *old;
	char key[16];
	int rc;

	if (!s)
		return mr_error(err, errlen, -EINVAL, "no symbolizer");
	s->maps_reads++;
	rc = mr_sym_process_snapshot(pid, s->roots, &p);
	if (rc < 0)
		return mr_error(err, errlen, rc, "cannot read the mappings of process %d: %s", (int)pid,
				strerror(-rc));
	pid_key(pid, key, sizeof(key));
	old = mr_string_map_get(s->procs, key);
	rc = mr_string_map_put(s->procs, key, p);
	if (rc < 0) {
		mr_sym_process_release(p, s->cache, s->roots);
		return mr_error(err, errlen, rc, "out of memory tracking process %d", (int)pid);
	}
	mr_sym_process_release(old, s->cache, s->roots);
	return 0;
}

void mr_symbolizer_forget(mr_symbolizer *s, int32_t pid)
{
	char key[16];

	if (!s)
		return;
	pid_key(pid, key, sizeof(key));
	mr_sym_process_release(mr_string_map_take(s->procs, key), s->cache, s->roots);
}

/* Every field: callers reuse one struct for frame after frame. */
static void clear_symbol(struct mr_symbol *out)
{
	*out = (struct mr_symbol){ .build_id = "", .kind = MR_FRAME_UNKNOWN };
}

/* The interned readable form of a raw symbol name. */
static const char *intern_symbol(mr_symbolizer *s, const char *raw)
{
	const char *name = mr_string_map_get(s->names, raw);
	char *demangled;

	if (name)
		return name;
	demangled = mr_sym_demangle(raw);
	if (!demangled)
		return NULL;
	name = mr_string_map_intern(s->strings, demangled);
	free(demangled);
	if (name && mr_string_map_put(s->names, raw, (void *)name) < 0)
		return NULL;
	return name;
}

/* Names the function at out->offset of f; out->module is already set. */
static int fill_from_file(mr_symbolizer *s, const struct mr_sym_file *f, int ret, struct mr_symbol *out)
{
	const char *raw = mr_sym_file_lookup(f, out->offset, ret);

	out->build_id = mr_string_map_intern(s->strings, f->build_id);
	if (!out->build_id)
		return -ENOMEM;
	if (!raw) {
		s->unresolved++;
		return 0;
	}
	out->name = intern_symbol(s, raw);
	return out->name ? 0 : -ENOMEM;
}

/* Names addr from the process's perf map; 0 when found, else -ENOENT. */
static int fill_jit(mr_symbolizer *s, struct mr_sym_process *p, uint64_t addr, int ret, struct mr_symbol *out)
{
	char path[64];
	const char *name = mr_sym_process_jit(p, addr, ret);

	if (!name)
		return -ENOENT;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", p->pid);
	out->name = mr_string_map_intern(s->strings, name);
	out->module = mr_string_map_intern(s->strings, path);
	if (!out->name || !out->module)
		return -ENOMEM;
	out->offset = addr;
	out->kind = MR_FRAME_JIT;
	return 0;
}

static int fill_anonymous(mr_symbolizer *s, struct mr_sym_process *p, const struct mr_proc_map_entry *m,
			  uint64_t addr, int ret, struct mr_symbol *out)
{
	int rc = fill_jit(s, p, addr, ret, out);

	if (rc != -ENOENT)
		return rc;
	out->module = mr_string_map_intern(s->strings, m->path[0] ? m->path : "[anon]");
	if (!out->module)
		return -ENOMEM;
	out->offset = addr - m->start;
	out->kind = MR_FRAME_USER;
	s->unresolved++;
	return 0;
}

static int fill_from_mapping(mr_symbolizer *s, struct mr_sym_process *p, const struct mr_proc_map_entry *m,
			     uint64_t addr, int ret, struct mr_symbol *out)
{
	struct mr_sym_loader l = { s->cache, s->vdso_fd, s->parse_budget >= 0 ? &s->parse_budget : NULL };
	struct mr_sym_file *f;
	int rc = mr_sym_process_file(p, m, &l, &f);

	if (rc)
		return rc;
	if (m->path[0] != '/' && !f)
		return fill_anonymous(s, p, m, addr, ret, out);
	if (!f && fill_jit(s, p, addr, ret, out) == 0)
		return 0; /* e.g. JIT code in a memfd mapping */
	out->module = mr_string_map_intern(s->strings, m->path);
	if (!out->module)
		return -ENOMEM;
	out->offset = addr - m->start + m->pgoff;
	out->kind = MR_FRAME_USER;
	out->executable = p->exe && strcmp(m->path, p->exe) == 0;
	if (f)
		return fill_from_file(s, f, ret, out);
	s->unresolved++;
	return 0;
}

/* The mapping of addr in pid, snapshotting the process when it is not known
 * yet, or again when addr is outside every known mapping (e.g. dlopen). */
static const struct mr_proc_map_entry *find_mapping(mr_symbolizer *s, int32_t pid, uint64_t addr,
						    struct mr_sym_process **pp, int *err)
{
	struct mr_sym_process *p = find_process(s, pid);
	const struct mr_proc_map_entry *m = p ? mr_proc_maps_find(&p->maps, addr) : NULL;

	*err = 0;
	if (!m) {
		*err = mr_symbolizer_track(s, pid, NULL, 0);
		if (*err < 0 && !p)
			return NULL;
		p = find_process(s, pid);
		m = mr_proc_maps_find(&p->maps, addr);
		*err = m ? 0 : -ENOENT;
	}
	*pp = p;
	return m;
}

int mr_symbolizer_resolve(mr_symbolizer *s, int32_t pid, uint64_t addr, uint32_t flags, struct mr_symbol *out,
			  char *err, size_t errlen)
{
	struct mr_sym_process *p = NULL;
	const struct mr_proc_map_entry *m;
	int rc;

	if (!s || !out)
		return mr_error(err, errlen, -EINVAL, "no symbolizer or no output");
	clear_symbol(out);
	m = find_mapping(s, pid, addr, &p, &rc);
	if (!m && p) {
		s->not_code++;
		return mr_error(err, errlen, -EFAULT, "0x%llx is not code of process %d: no mapping holds it",
				(unsigned long long)addr, (int)pid);
	}
	if (!m) {
		s->unresolved++;
		return mr_error(err, errlen, rc, "no mapping of process %d holds 0x%llx: %s", (int)pid,
				(unsigned long long)addr, strerror(-rc));
	}
	if (!m->exec) {
		s->not_code++;
		return mr_error(err, errlen, -EFAULT,
				"0x%llx is not code of process %d: %s is not executable",
				(unsigned long long)addr, (int)pid, m->path[0] ? m->path : "[anon]");
	}
	rc = fill_from_mapping(s, p, m, addr, flags & MR_SYMBOL_RETURN_ADDRESS, out);
	if (rc == -EAGAIN)
		return mr_error(err, errlen, rc, "%s is not parsed yet and no more files may be parsed now",
				m->path);
	return rc ? mr_error(err, errlen, rc, "out of memory naming 0x%llx", (unsigned long long)addr) : 0;
}

/* Loads kallsyms on first use. A failure is returned once; later calls get 0
 * and leave names NULL. */
static int load_kernel(mr_symbolizer *s)
{
	int rc;

	if (!s->kernel)
		return -EOPNOTSUPP;
	if (s->ksyms_state != KSYMS_UNLOADED)
		return 0;
	rc = mr_sym_kallsyms_load(KALLSYMS_PATH, &s->ksyms);
	s->ksyms_state = rc < 0 ? KSYMS_FAILED : KSYMS_LOADED;
	return rc;
}

int mr_symbolizer_resolve_kernel(mr_symbolizer *s, uint64_t addr, uint32_t flags, struct mr_symbol *out,
				 char *err, size_t errlen)
{
	int rc;

	if (!s || !out)
		return mr_error(err, errlen, -EINVAL, "no symbolizer or no output");
	clear_symbol(out);
	out->module = MR_KERNEL_MODULE;
	out->offset = addr;
	out->kind = MR_FRAME_KERNEL;
	rc = load_kernel(s);
	if (rc == 0 && s->ksyms_state == KSYMS_LOADED)
		out->name = flags & MR_SYMBOL_RETURN_ADDRESS ? mr_sym_table_find_return(&s->ksyms, addr)
							     : mr_sym_table_find(&s->ksyms, addr);
	if (!out->name)
		s->unresolved++;
	if (rc == -EOPNOTSUPP)
		return mr_error(err, errlen, rc, "this symbolizer was made without kernel symbols");
	return rc ? mr_error(err, errlen, rc, "cannot read " KALLSYMS_PATH ": %s", strerror(-rc)) : 0;
}

int mr_symbolizer_resolve_file(mr_symbolizer *s, const char *path, uint64_t file_offset,
			       struct mr_symbol *out, char *err, size_t errlen)
{
	struct mr_sym_file *f;
	int fd, rc;

	if (!s || !path || !out)
		return mr_error(err, errlen, -EINVAL, "no symbolizer, path or output");
	clear_symbol(out);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	rc = fd < 0 ? -errno : mr_sym_file_cache_get(s->cache, fd, "", path, NULL, &f);
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		s->unresolved++;
		return mr_error(err, errlen, rc, "cannot read the symbols of %s: %s", path, strerror(-rc));
	}
	out->module = mr_string_map_intern(s->strings, path);
	out->offset = file_offset;
	out->kind = MR_FRAME_USER;
	rc = out->module ? fill_from_file(s, f, 0, out) : -ENOMEM;
	mr_sym_file_cache_put(s->cache, f);
	return rc ? mr_error(err, errlen, rc, "out of memory naming %s+0x%llx", path,
			     (unsigned long long)file_offset)
		  : 0;
}

void mr_symbolizer_stats(const mr_symbolizer *s, struct mr_symbolizer_stats *out)
{
	struct mr_sym_file_cache_stats cs;

	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	mr_sym_file_cache_stats(s->cache, &cs);
	out->files_parsed = cs.parsed;
	out->file_cache_hits = cs.hits;
	out->processes = mr_string_map_count(s->procs);
	out->maps_reads = s->maps_reads;
	out->roots = mr_sym_roots_count(s->roots);
	out->unresolved = s->unresolved;
	out->not_code = s->not_code;
}

void mr_symbolizer_limit_parses(mr_symbolizer *s, int64_t files)
{
	if (s)
		s->parse_budget = files < 0 ? -1 : files;
}
