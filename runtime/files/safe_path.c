/* safe_path.c - opening the directory of a path one directory at a time,
 * following only the symbolic links that protected_symlinks allows (see
 * safe_path.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "files/safe_path.h"

#define MAX_LINKS 40 /* as the kernel's MAXSYMLINKS */
#define TEMP_TRIES 100

struct walk {
	int dirfd;            /* the directory reached so far */
	char *rest;           /* what is left to walk (malloc'd) */
	size_t pos;           /* where the next component starts in rest */
	int links;            /* links followed so far */
	char shown[PATH_MAX]; /* the path walked so far, for messages */
};

static int open_start(const char *path)
{
	return open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* Copies the next component of w->rest into comp; returns its length, 0 at
 * the end, or -ENAMETOOLONG. */
static int next_component(struct walk *w, char comp[NAME_MAX + 1])
{
	size_t len;

	while (w->rest[w->pos] == '/')
		w->pos++;
	len = strcspn(w->rest + w->pos, "/");
	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(comp, w->rest + w->pos, len);
	comp[len] = '\0';
	w->pos += len;
	return (int)len;
}

/* The kernel's rule for following a link with protected_symlinks=1. */
static int may_follow(const struct stat *dir, const struct stat *link)
{
	if ((dir->st_mode & (S_ISVTX | S_IWOTH)) != (S_ISVTX | S_IWOTH))
		return 1;
	return link->st_uid == geteuid() || link->st_uid == dir->st_uid;
}

/* Walks on from the link's target: rest becomes target + what was left. */
static int follow(struct walk *w, int linkfd, const struct stat *link, const char *comp, char *err,
		  size_t errlen)
{
	char target[PATH_MAX];
	struct stat dir;
	ssize_t n;
	size_t left;
	char *rest;

	if (fstat(w->dirfd, &dir) != 0)
		return mr_error(err, errlen, -errno, "%s: %s", w->shown, strerror(errno));
	if (!may_follow(&dir, link))
		return mr_error(err, errlen, -EPERM,
				"%s/%s is a symbolic link of uid %u in a sticky, world-writable directory "
				"(not followed: another user may have planted it)",
				w->shown, comp, (unsigned)link->st_uid);
	if (++w->links > MAX_LINKS)
		return mr_error(err, errlen, -ELOOP, "%s/%s: %s", w->shown, comp, strerror(ELOOP));
	n = readlinkat(linkfd, "", target, sizeof(target));
	if (n < 0 || (size_t)n >= sizeof(target))
		return mr_error(err, errlen, n < 0 ? -errno : -ENAMETOOLONG, "%s/%s: %s", w->shown, comp,
				strerror(n < 0 ? errno : ENAMETOOLONG));
	left = strlen(w->rest + w->pos);
	rest = malloc((size_t)n + 1 + left + 1);
	if (!rest)
		return mr_error(err, errlen, -ENOMEM, "out of memory");
	memcpy(rest, target, (size_t)n);
	rest[n] = '/';
	memcpy(rest + n + 1, w->rest + w->pos, left + 1);
	free(w->rest);
	w->rest = rest;
	w->pos = 0;
	if (target[0] == '/') {
		int fd = open_start(target);

		if (fd < 0)
			return mr_error(err, errlen, -errno, "/: %s", strerror(errno));
		close(w->dirfd);
		w->dirfd = fd;
		w->shown[0] = '\0';
	}
	return 0;
}

/* Goes into the directory comp, or through the link comp. */
static int step(struct walk *w, const char *comp, char *err, size_t errlen)
{
	int fd = openat(w->dirfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int rc = 0;

	if (fd < 0)
		return mr_error(err, errlen, -errno, "%s/%s: %s", w->shown, comp, strerror(errno));
	if (fstat(fd, &st) != 0)
		rc = mr_error(err, errlen, -errno, "%s/%s: %s", w->shown, comp, strerror(errno));
	else if (S_ISLNK(st.st_mode))
		rc = follow(w, fd, &st, comp, err, errlen);
	else if (!S_ISDIR(st.st_mode))
		rc = mr_error(err, errlen, -ENOTDIR, "%s/%s is not a directory", w->shown, comp);
	else {
		size_t len = strlen(w->shown);

		snprintf(w->shown + len, sizeof(w->shown) - len, "/%s", comp);
		close(w->dirfd);
		w->dirfd = fd;
		return 0;
	}
	close(fd);
	return rc;
}

static int walk_all(struct walk *w, char *err, size_t errlen)
{
	char comp[NAME_MAX + 1];
	int len;

	while ((len = next_component(w, comp)) != 0) {
		int rc = len < 0 ? mr_error(err, errlen, len, "%s: %s", w->shown, strerror(-len))
			 : strcmp(comp, ".") == 0 ? 0
						  : step(w, comp, err, errlen);

		if (rc != 0)
			return rc;
	}
	return 0;
}

int mr_safe_path_open_dir(const char *path, size_t *name_at, char *err, size_t errlen)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	const char *name = slash ? slash + 1 : path;
	struct walk w = { .dirfd = -1 };
	int rc;

	if (!path || !*path)
		return mr_error(err, errlen, -EINVAL, "no file named");
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return mr_error(err, errlen, -EISDIR, "%s", strerror(EISDIR));
	w.rest = strndup(path, slash ? (size_t)(slash - path) : 0);
	if (!w.rest)
		return mr_error(err, errlen, -ENOMEM, "out of memory");
	snprintf(w.shown, sizeof(w.shown), "%s", path[0] == '/' ? "" : ".");
	w.dirfd = open_start(path);
	rc = w.dirfd < 0
		     ? mr_error(err, errlen, -errno, "%s: %s", path[0] == '/' ? "/" : ".", strerror(errno))
		     : walk_all(&w, err, errlen);
	free(w.rest);
	if (rc != 0) {
		if (w.dirfd >= 0)
			close(w.dirfd);
		return rc;
	}
	*name_at = (size_t)(name - path);
	return w.dirfd;
}

/* Writes NAME.XXXXXX (random letters) into tmp, which has room for len + 8
 * bytes (len: the length of name). Returns 0, or -EIO. */
static int temp_name(char *tmp, const char *name, size_t len)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char r[6];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	memcpy(tmp, name, len);
	tmp[len] = '.';
	for (size_t i = 0; i < sizeof(r); i++)
		tmp[len + 1 + i] = letters[r[i] % (sizeof(letters) - 1)];
	tmp[len + 1 + sizeof(r)] = '\0';
	return 0;
}

int mr_safe_path_try_temp(int dirfd, const char *name, mr_safe_path_try_fn try_fn, void *arg, char **tmp_name)
{
	size_t len = strlen(name);
	char *tmp = malloc(len + 8);
	int rc = -EEXIST;

	if (!tmp)
		return -ENOMEM;
	for (int i = 0; i < TEMP_TRIES && rc == -EEXIST; i++) {
		rc = temp_name(tmp, name, len);
		if (rc == 0)
			rc = try_fn(dirfd, tmp, arg);
	}
	if (rc < 0) {
		free(tmp);
		return rc;
	}
	*tmp_name = tmp;
	return rc;
}

int mr_safe_path_exact_mode(int fd, mode_t mode)
{
	int e;

	if (fchmod(fd, mode) == 0)
		return fd;
	e = errno;
	(void)close(fd);
	return -e;
}

/* Creates tmp exclusively, never through a link, with exactly *mode. */
static int create_new(int dirfd, const char *tmp, void *arg)
{
	mode_t mode = *(const mode_t *)arg;
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);

	if (fd < 0)
		return -errno;
	fd = mr_safe_path_exact_mode(fd, mode);
	if (fd < 0)
		(void)unlinkat(dirfd, tmp, 0);
	return fd;
}

int mr_safe_path_create_temp(int dirfd, const char *name, mode_t mode, char **tmp_name, char *err,
			     size_t errlen)
{
	int fd = mr_safe_path_try_temp(dirfd, name, create_new, &mode, tmp_name);

	return fd < 0 ? mr_error(err, errlen, fd, "%s", strerror(-fd)) : fd;
}
