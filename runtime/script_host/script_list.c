/* script_list.c - lists script files and merges the bundled and user sets. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "base/log.h"
#include "script_host/script_list.h"
#include "script_host/script_trust.h"

#define MAX_NAME 128

struct builder {
	struct mr_script_list *list;
	size_t cap;
};

static int is_script(const char *file)
{
	size_t len = strlen(file);

	return len > 4 && len - 4 < MAX_NAME && strcmp(file + len - 4, ".lua") == 0 && file[0] != '.';
}

static struct mr_script_entry *find(struct mr_script_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return &l->v[i];
	return NULL;
}

/* Adds dir/file, replacing an entry of the same name. */
static int put(struct builder *b, const char *dir, const char *file)
{
	size_t len = strlen(file) - 4, plen = strlen(dir) + strlen(file) + 2;
	char *name = strndup(file, len), *path = malloc(plen);
	struct mr_script_entry *e;

	if (!name || !path) {
		free(name);
		free(path);
		return -ENOMEM;
	}
	snprintf(path, plen, "%s/%s", dir, file);
	e = find(b->list, name);
	if (!e) {
		void *grown = mr_grow_array(b->list->v, &b->cap, b->list->n + 1, sizeof(*e));

		if (!grown) {
			free(name);
			free(path);
			return -ENOMEM;
		}
		b->list->v = grown;
		e = &b->list->v[b->list->n++];
		e->name = name;
	} else {
		free(name);
		free(e->path);
	}
	e->path = path;
	return 0;
}

/* Whether file (name.lua) is named in skip, a list of names separated by ','. */
static int skipped(const char *file, const char *skip)
{
	size_t n = strlen(file) - 4;

	while (skip && *skip) {
		size_t len = strcspn(skip, ",");

		if (len == n && strncmp(skip, file, n) == 0)
			return 1;
		skip += len + (skip[len] == ',');
	}
	return 0;
}

static int read_dir(struct builder *b, const char *dir, const char *skip, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return mr_error(err, errlen, -errno, "cannot read the scripts directory %s: %s", dir,
				strerror(errno));
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (is_script(de->d_name) && !skipped(de->d_name, skip))
			rc = put(b, dir, de->d_name);
	closedir(d);
	return rc ? mr_error(err, errlen, rc, "out of memory listing %s", dir) : 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct mr_script_entry *)a)->name, ((const struct mr_script_entry *)b)->name);
}

int mr_script_list_read(const struct mr_script_dirs *dirs, struct mr_script_list *out, char *err,
			size_t errlen)
{
	struct builder b = { .list = out };
	int rc;

	memset(out, 0, sizeof(*out));
	rc = read_dir(&b, dirs->bundled, dirs->bundled_skip, err, errlen);
	if (rc == 0 && dirs->user && !dirs->user_unchecked)
		rc = mr_script_trust_dir(dirs->user, err, errlen);
	if (rc == 0 && dirs->user)
		rc = read_dir(&b, dirs->user, NULL, err, errlen);
	if (rc != 0) {
		mr_script_list_free(out);
		return rc;
	}
	qsort(out->v, out->n, sizeof(*out->v), by_name);
	return 0;
}

void mr_script_list_free(struct mr_script_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].path);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}
