/* file_read.c - whole-file and line-by-line reads (see file_read.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "files/file_read.h"

enum { FIRST_CHUNK = 4096 };

ssize_t mr_file_read_upto(int fd, char *buf, size_t want)
{
	size_t n = 0;

	while (n < want) {
		ssize_t r = read(fd, buf + n, want - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	return (ssize_t)n;
}

/* Closes fd; the result is rc, or the close error when rc was not one. */
static ssize_t close_keeping(int fd, ssize_t rc)
{
	if (close(fd) != 0 && rc >= 0)
		return -errno;
	return rc;
}

ssize_t mr_file_read_into(const char *path, char *buf, size_t cap)
{
	int fd;
	ssize_t n;

	if (!buf || cap == 0)
		return -EINVAL;
	buf[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = mr_file_read_upto(fd, buf, cap - 1);
	if (n >= 0)
		buf[n] = '\0';
	return close_keeping(fd, n);
}

/* Reads fd to its end, growing the buffer; -EFBIG beyond max bytes. */
static int read_growing(int fd, size_t max, char **out, size_t *len)
{
	size_t cap = FIRST_CHUNK, n = 0;
	char *buf = NULL, *grown;
	ssize_t got;
	int rc = -ENOMEM;

	while ((grown = realloc(buf, cap)) != NULL) {
		buf = grown;
		got = mr_file_read_upto(fd, buf + n, cap - 1 - n);
		rc = got < 0 ? (int)got : 0;
		n += got < 0 ? 0 : (size_t)got;
		if (rc == 0 && n > max)
			rc = -EFBIG;
		if (rc != 0 || n < cap - 1)
			break;
		if (cap > SIZE_MAX / 2) {
			rc = -EFBIG;
			break;
		}
		cap *= 2;
		rc = -ENOMEM; /* what stands if the next realloc fails */
	}
	if (rc != 0) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int mr_file_read_fd(int fd, size_t max, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	return read_growing(fd, max, out, len);
}

int mr_file_read_all(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	return (int)close_keeping(fd, mr_file_read_fd(fd, max, out, len));
}
int mr_file_read_lines(FILE *f, int (*fn)(void *ctx, const char *line), void *ctx)
{
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;

	while (rc >= 0 && getline(&line, &cap, f) >= 0)
		rc = fn(ctx, line);
	free(line);
	if (rc >= 0 && ferror(f))
		rc = -EIO;
	return rc < 0 ? rc : 0;
}
