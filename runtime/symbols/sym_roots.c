/* sym_roots.c - shared, reference-counted root directories of tracked
 * processes, keyed by the directory's device and inode (see sym_roots.h). */
#include "symbols/sym_roots.h"
#include "base/string_map.h"
#include "proc/proc_root.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct mr_sym_roots {
	struct mr_string_map *by_id; /* "dev:ino" -> struct mr_sym_root */
};

static void close_root(void *v)
{
	struct mr_sym_root *root = v;

	close(root->fd);
	free(root);
}

struct mr_sym_roots *mr_sym_roots_new(void)
{
	struct mr_sym_roots *r = calloc(1, sizeof(*r));

	if (r && !(r->by_id = mr_string_map_new(close_root))) {
		free(r);
		r = NULL;
	}
	return r;
}

void mr_sym_roots_free(struct mr_sym_roots *r)
{
	if (!r)
		return;
	mr_string_map_free(r->by_id);
	free(r);
}

/* Opens the root directory of pid; its identity is checked against st, the
 * stat of the same path a moment before, so a recycled pid is not mixed up. */
static int open_root(const char *path, const struct stat *st, const char *key, struct mr_sym_roots *r,
		     struct mr_sym_root **out)
{
	struct mr_sym_root *root = calloc(1, sizeof(*root));
	struct stat now;
	int rc;

	if (!root)
		return -ENOMEM;
	root->fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root->fd < 0 || fstat(root->fd, &now) < 0 || now.st_dev != st->st_dev ||
	    now.st_ino != st->st_ino) {
		rc = root->fd < 0 ? -errno : -ESRCH;
		if (root->fd >= 0)
			close(root->fd);
		free(root);
		return rc;
	}
	snprintf(root->path, sizeof(root->path), "/proc/self/fd/%d", root->fd);
	snprintf(root->key, sizeof(root->key), "%s", key);
	rc = mr_string_map_put(r->by_id, key, root);
	if (rc < 0) {
		close_root(root);
		return rc;
	}
	*out = root;
	return 0;
}

int mr_sym_roots_get(struct mr_sym_roots *r, int32_t pid, struct mr_sym_root **out)
{
	char path[PATH_MAX], key[48];
	struct stat st;
	int rc = mr_proc_path(path, sizeof(path), pid, "root");

	if (rc < 0)
		return rc;
	if (stat(path, &st) < 0)
		return -errno;
	snprintf(key, sizeof(key), "%" PRIu64 ":%" PRIu64, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
	*out = mr_string_map_get(r->by_id, key);
	if (!*out && (rc = open_root(path, &st, key, r, out)) < 0)
		return rc;
	(*out)->refs++;
	return 0;
}

void mr_sym_roots_put(struct mr_sym_roots *r, struct mr_sym_root *root)
{
	if (!root || --root->refs > 0)
		return;
	mr_string_map_take(r->by_id, root->key);
	close_root(root);
}

uint64_t mr_sym_roots_count(const struct mr_sym_roots *r)
{
	return r ? mr_string_map_count(r->by_id) : 0;
}
