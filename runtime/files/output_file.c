/* output_file.c - atomic output files (see output_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "files/output_file.h"
#include "files/safe_path.h"
#include "files/unnamed_file.h"

#define OUTPUT_MODE 0644

struct mr_output {
	char *path;       /* the target as given, "-" for standard output */
	const char *name; /* the target's name in dirfd (inside path) */
	char *tmp_name;   /* the temporary file's name in dirfd, when it has one */
	int unnamed;      /* fd is an unnamed file (O_TMPFILE) in dirfd */
	int dirfd;        /* the target's directory; -1 for standard output */
	int fd;
	int error; /* the first negative errno met while writing, or 0 */
};

static const char LINK_REFUSED[] = "it is a symbolic link, and outputs are never written through a "
				   "link nor put in its place (name the file itself, or - for "
				   "standard output)";

static int is_stdout(const char *path)
{
	return strcmp(path, "-") == 0;
}

/* Whether the data goes to a temporary file put in place at commit. */
static int is_held(const mr_output *o)
{
	return o->unnamed || o->tmp_name;
}

/* An unnamed file where the file system allows, so that a run killed before
 * commit leaves nothing; else one under a temporary name. */
static int make_temp(mr_output *o, char *why, size_t whylen)
{
	o->fd = mr_unnamed_file_create(o->dirfd, OUTPUT_MODE);
	o->unnamed = o->fd >= 0;
	if (o->fd == -EOPNOTSUPP)
		o->fd = mr_safe_path_create_temp(o->dirfd, o->name, OUTPUT_MODE, &o->tmp_name, why, whylen);
	else if (o->fd < 0)
		mr_error(why, whylen, o->fd, "%s", strerror(-o->fd));
	return o->fd < 0 ? o->fd : 0;
}

/* "WHAT", and where the data was going meanwhile. */
static int why_failed(const mr_output *o, int rc, char *err, size_t errlen)
{
	int dir_len;

	if (!is_held(o))
		return mr_error(err, errlen, rc, "%s", strerror(-rc));
	dir_len = (int)(o->name - o->path);
	while (dir_len > 1 && o->path[dir_len - 1] == '/')
		dir_len--;
	return mr_error(err, errlen, rc, "%s (written first to %s%s in %.*s)", strerror(-rc),
			o->unnamed ? "an unnamed temporary file" : "the temporary file ",
			o->unnamed ? "" : o->tmp_name, dir_len ? dir_len : 1, dir_len ? o->path : ".");
}

/* "cannot write PATH: WHAT", and where the data was going meanwhile. */
static int fail(const mr_output *o, int rc, char *err, size_t errlen)
{
	char why[512];

	why_failed(o, rc, why, sizeof(why));
	return mr_error(err, errlen, rc, "cannot write %s: %s", o->path, why);
}

/* A FIFO or a character device (/dev/null) is written in place: replacing
 * it with a file would break it for everyone else. */
static int open_in_place(mr_output *o, mode_t type, char *why, size_t whylen)
{
	struct stat st;

	o->fd = openat(o->dirfd, o->name, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (o->fd < 0)
		return mr_error(why, whylen, errno == ELOOP ? -ELOOP : -errno, "%s",
				errno == ELOOP ? LINK_REFUSED : strerror(errno));
	if (fstat(o->fd, &st) != 0)
		return mr_error(why, whylen, -errno, "%s", strerror(errno));
	return (st.st_mode & S_IFMT) == type
		       ? 0
		       : mr_error(why, whylen, -EAGAIN, "it changed while being opened");
}

/* Decides from what is at the target now: nothing or a regular file gets a
 * temporary file renamed over it at commit; a link is refused. */
static int open_target(mr_output *o, char *why, size_t whylen)
{
	size_t name_at;
	struct stat st;

	o->dirfd = mr_safe_path_open_dir(o->path, &name_at, why, whylen);
	if (o->dirfd < 0)
		return o->dirfd;
	o->name = o->path + name_at;
	if (fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? make_temp(o, why, whylen)
				       : mr_error(why, whylen, -errno, "%s", strerror(errno));
	if (S_ISREG(st.st_mode))
		return make_temp(o, why, whylen);
	if (S_ISLNK(st.st_mode))
		return mr_error(why, whylen, -ELOOP, "%s", LINK_REFUSED);
	if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))
		return open_in_place(o, st.st_mode & S_IFMT, why, whylen);
	if (S_ISDIR(st.st_mode))
		return mr_error(why, whylen, -EISDIR, "%s", strerror(EISDIR));
	return mr_error(why, whylen, -EINVAL, "it is not a regular file, a FIFO or a character device");
}

static void release(mr_output *o)
{
	if (o->fd >= 0 && o->dirfd >= 0)
		(void)close(o->fd); /* only after a failure: the file is thrown away */
	if (o->tmp_name)
		(void)unlinkat(o->dirfd, o->tmp_name, 0);
	if (o->dirfd >= 0)
		(void)close(o->dirfd);
	free(o->tmp_name);
	free(o->path);
	free(o);
}

mr_output *mr_output_open(const char *path, char *err, size_t errlen)
{
	char why[512] = "out of memory";
	mr_output *o;
	int rc = -ENOMEM;

	if (!path || !path[0])
		return mr_fail_null(mr_error(err, errlen, -EINVAL, "no output file named"));
	o = calloc(1, sizeof(*o));
	if (o) {
		o->dirfd = -1;
		o->fd = is_stdout(path) ? STDOUT_FILENO : -1;
		o->path = strdup(path);
		rc = !o->path ? -ENOMEM : is_stdout(path) ? 0 : open_target(o, why, sizeof(why));
	}
	if (rc == 0)
		return o;
	mr_error(err, errlen, rc, "cannot write %s: %s", path, why);
	if (o)
		release(o);
	return mr_fail_null(rc); /* last: release() may change errno */
}

int mr_output_write_all(mr_output *o, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (!o->error && len > 0) {
		ssize_t n = write(o->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			o->error = -errno;
		else if (n == 0)
			o->error = -EIO;
		else {
			p += n;
			len -= (size_t)n;
		}
	}
	return o->error;
}

int mr_output_write(mr_output *o, const void *data, size_t len, char *err, size_t errlen)
{
	int rc = mr_output_write_all(o, data, len);

	return rc ? fail(o, rc, err, errlen) : 0;
}

int mr_output_failed(const mr_output *o, char *err, size_t errlen)
{
	return o->error ? why_failed(o, o->error, err, errlen) : 0;
}

/* An unnamed file: synced (which reports any write error the kernel still
 * holds), linked into place, then closed, a close error no longer mattering
 * once the target has its data. */
static int finish_unnamed(mr_output *o)
{
	int rc = fsync(o->fd) == 0 ? 0 : -errno;

	if (rc == 0)
		rc = mr_unnamed_file_link(o->fd, o->dirfd, o->name, OUTPUT_MODE);
	if (rc == 0) {
		(void)close(o->fd);
		o->fd = -1;
	}
	return rc;
}

/* Syncs, closes and puts in place, checking each, so that a failure leaves
 * the target as it was; a file written in place is only closed. */
static int finish(mr_output *o)
{
	int fd = o->fd;

	if (o->error)
		return o->error;
	if (o->dirfd < 0)
		return 0; /* standard output */
	if (o->unnamed)
		return finish_unnamed(o);
	if (o->tmp_name && fsync(fd) != 0)
		return -errno;
	o->fd = -1;
	if (close(fd) != 0)
		return -errno;
	if (!o->tmp_name)
		return 0;
	if (renameat(o->dirfd, o->tmp_name, o->dirfd, o->name) != 0)
		return -errno;
	free(o->tmp_name);
	o->tmp_name = NULL;
	return 0;
}

int mr_output_commit(mr_output *o, char *err, size_t errlen)
{
	int rc;

	if (!o)
		return mr_error(err, errlen, -EINVAL, "no output file");
	rc = finish(o);
	if (rc)
		fail(o, rc, err, errlen);
	release(o);
	return rc;
}

void mr_output_abort(mr_output *o)
{
	if (o)
		release(o);
}
