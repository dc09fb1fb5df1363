/* script_trust.c - ownership and mode checks of the user's scripts (see
 * script_trust.h). Files are judged by the descriptor they are read from, so
 * what was checked is what runs. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "base/log.h"
#include "script_host/script_trust.h"

#define HINT "allow it with --allow-unsafe-scripts"

/* Why st may not hold code the agent runs, or NULL; above: a directory
 * above the scripts, which may be sticky and writable by others. */
static const char *problem(const struct stat *st, int above, char *buf, size_t len)
{
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(buf, len,
			 "owned by uid %u, not by root or the agent's user (fix with chown, or " HINT ")",
			 (unsigned)st->st_uid);
		return buf;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) &&
	    !(above && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))) {
		snprintf(buf, len,
			 "writable by group or others (mode %04o; fix with chmod go-w, or " HINT ")",
			 (unsigned)(st->st_mode & 07777));
		return buf;
	}
	return NULL;
}

static int check_path(const char *path, int above, const char *scripts, char *err, size_t errlen)
{
	struct stat st;
	char why[160];

	if (stat(path, &st) != 0)
		return mr_error(err, errlen, -errno, "cannot check the scripts directory %s: %s", scripts,
				strerror(errno));
	if (!problem(&st, above, why, sizeof(why)))
		return 0;
	if (strcmp(path, scripts) == 0)
		return mr_error(err, errlen, -EPERM, "refusing to run scripts from %s: it is %s", scripts,
				why);
	return mr_error(err, errlen, -EPERM, "refusing to run scripts from %s: %s above it is %s", scripts,
			path, why);
}

int mr_script_trust_dir(const char *dir, char *err, size_t errlen)
{
	char real[PATH_MAX], *slash;
	int rc;

	if (!realpath(dir, real))
		return mr_error(err, errlen, -errno, "cannot read the scripts directory %s: %s", dir,
				strerror(errno));
	rc = check_path(real, 0, real, err, errlen);
	while (rc == 0 && (slash = strrchr(real, '/')) != NULL && real[1] != '\0') {
		if (slash == real)
			slash[1] = '\0';
		else
			*slash = '\0';
		rc = check_path(real, 1, dir, err, errlen);
	}
	return rc;
}

/* The directories between dir and path's file: path is dir/a/b/f.lua. */
static int check_between(const char *path, const char *dir, char *err, size_t errlen)
{
	size_t n = strlen(dir);
	char sub[PATH_MAX];
	struct stat st;
	char why[160];
	const char *p;

	if (strncmp(path, dir, n) != 0 || path[n] != '/' || strlen(path) >= sizeof(sub))
		return 0;
	for (p = strchr(path + n + 1, '/'); p; p = strchr(p + 1, '/')) {
		memcpy(sub, path, (size_t)(p - path));
		sub[p - path] = '\0';
		if (stat(sub, &st) != 0)
			return mr_error(err, errlen, -errno, "cannot check %s: %s", sub, strerror(errno));
		if (problem(&st, 0, why, sizeof(why)))
			return mr_error(err, errlen, -EPERM, "refusing to run %s: %s is %s", path, sub, why);
	}
	return 0;
}

int mr_script_trust_file(int fd, const char *path, const char *dir, char *err, size_t errlen)
{
	struct stat st;
	char why[160];

	if (fstat(fd, &st) != 0)
		return mr_error(err, errlen, -errno, "cannot check %s: %s", path, strerror(errno));
	if (problem(&st, 0, why, sizeof(why)))
		return mr_error(err, errlen, -EPERM, "refusing to run %s: it is %s", path, why);
	return check_between(path, dir, err, errlen);
}
