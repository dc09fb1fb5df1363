/* unwind_source.c - opens a mapping's file and takes its table from the
 * cache (see unwind_source.h). */
#include "unwind/unwind_source.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "proc/proc_root.h"

int mr_unwind_source_is_vdso(const struct mr_proc_map_entry *m)
{
	return strcmp(m->path, "[vdso]") == 0;
}

int mr_unwind_source_has_file(const struct mr_proc_map_entry *m)
{
	return mr_unwind_source_is_vdso(m) || (m->path[0] == '/' && m->inode != 0);
}

struct mr_unwind_file mr_unwind_source_file(const struct mr_proc_map_entry *m)
{
	struct mr_unwind_file f = { 0 };

	if (!mr_unwind_source_is_vdso(m))
		f = (struct mr_unwind_file){ m->dev_major, m->dev_minor, m->inode };
	return f;
}

static int open_mapping(int32_t pid, const struct mr_proc_map_entry *m, int vdso_fd)
{
	char name[PATH_MAX], path[PATH_MAX];
	int fd, rc;

	if (mr_unwind_source_is_vdso(m))
		return vdso_fd >= 0 ? fcntl(vdso_fd, F_DUPFD_CLOEXEC, 0) : -ENOENT;
	snprintf(name, sizeof(name), "map_files/%" PRIx64 "-%" PRIx64, m->start, m->end);
	if (mr_proc_path(path, sizeof(path), pid, name) == 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0)
		return fd;
	if (m->deleted)
		return -ENOENT; /* its file is gone: only map_files could reach it */
	if (snprintf(name, sizeof(name), "root%s", m->path) >= (int)sizeof(name))
		return -ENAMETOOLONG;
	rc = mr_proc_path(path, sizeof(path), pid, name);
	if (rc != 0)
		return rc;
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

struct mr_unwind_cached *mr_unwind_source_open(struct mr_unwind_cache *c, int32_t pid,
					       const struct mr_proc_map_entry *m, int vdso_fd)
{
	struct mr_unwind_file file = mr_unwind_source_file(m);
	struct mr_elf_info info = { 0 };
	struct mr_unwind_cached *t = mr_unwind_cache_by_file(c, &file);
	char key[160];
	Elf *e = NULL;
	int fd;

	if (t)
		return t;
	fd = open_mapping(pid, m, vdso_fd);
	if (fd >= 0 && mr_elf_open(fd, &e) == 0 && mr_elf_info_read(e, &info) == 0) {
		identity(m, &info, key, sizeof(key));
		t = mr_unwind_cache_get(c, key, e, &info, &file);
	}
	mr_elf_info_free(&info);
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return t;
}
