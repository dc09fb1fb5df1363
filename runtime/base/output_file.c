/* output_file.c - atomic output files (see output_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/output_file.h"

#define OUTPUT_MODE 0644

struct mr_output {
	char *path;     /* the target, "-" for standard output */
	char *tmp_path; /* NULL for standard output */
	int fd;
	int error; /* the first negative errno met while writing, or 0 */
};

static int is_stdout(const char *path)
{
	return strcmp(path, "-") == 0;
}

static int make_temp(mr_output *o)
{
	static const char suffix[] = ".XXXXXX";
	size_t len = strlen(o->path);

	o->tmp_path = malloc(len + sizeof(suffix));
	if (!o->tmp_path)
		return -ENOMEM;
	memcpy(o->tmp_path, o->path, len);
	memcpy(o->tmp_path + len, suffix, sizeof(suffix));
	/* mkostemp creates with O_EXCL: a planted link is never followed. */
	o->fd = mkostemp(o->tmp_path, O_CLOEXEC);
	if (o->fd < 0)
		return -errno;
	return fchmod(o->fd, OUTPUT_MODE) == 0 ? 0 : -errno;
}

static void release(mr_output *o)
{
	if (o->fd >= 0 && o->tmp_path)
		(void)close(o->fd); /* only after a failure: the file is thrown away */
	if (o->tmp_path)
		(void)unlink(o->tmp_path);
	free(o->tmp_path);
	free(o->path);
	free(o);
}

mr_output *mr_output_open(const char *path, char *err, size_t errlen)
{
	mr_output *o;
	int rc = -ENOMEM;

	if (!path || !path[0]) {
		mr_error(err, errlen, -EINVAL, "no output file named");
		return NULL;
	}
	o = calloc(1, sizeof(*o));
	if (o) {
		o->fd = is_stdout(path) ? STDOUT_FILENO : -1;
		o->path = strdup(path);
		rc = !o->path ? -ENOMEM : is_stdout(path) ? 0 : make_temp(o);
	}
	if (rc == 0)
		return o;
	mr_error(err, errlen, rc, "cannot write %s: %s", path, strerror(-rc));
	if (o)
		release(o);
	return NULL;
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

	return rc ? mr_error(err, errlen, rc, "cannot write %s: %s", o->path, strerror(-rc)) : 0;
}

/* Syncs, closes (checking both) and renames onto the target. */
static int finish(mr_output *o)
{
	int fd = o->fd;

	if (o->error)
		return o->error;
	if (!o->tmp_path)
		return 0;
	if (fsync(fd) != 0)
		return -errno;
	o->fd = -1;
	if (close(fd) != 0)
		return -errno;
	if (rename(o->tmp_path, o->path) != 0)
		return -errno;
	free(o->tmp_path);
	o->tmp_path = NULL;
	return 0;
}

int mr_output_commit(mr_output *o, char *err, size_t errlen)
{
	int rc;

	if (!o)
		return mr_error(err, errlen, -EINVAL, "no output file");
	rc = finish(o);
	if (rc)
		mr_error(err, errlen, rc, "cannot write %s: %s", o->path, strerror(-rc));
	release(o);
	return rc;
}

void mr_output_abort(mr_output *o)
{
	if (o)
		release(o);
}
