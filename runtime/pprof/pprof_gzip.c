/* pprof_gzip.c - atomic gzip file writer (see pprof_gzip.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pprof/pprof_gzip.h"

enum {
	GZIP_CHUNK = 64 * 1024,
	GZIP_WINDOW_BITS = 15 + 16, /* a 32 KiB window and a gzip header */
	GZIP_MEM_LEVEL = 8,
	GZIP_FILE_MODE = 0644,
};

static int write_all(int fd, const unsigned char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Runs deflate over the gathered input with flush (Z_NO_FLUSH or Z_FINISH)
 * and writes what comes out. */
static int deflate_input(struct mr_pprof_gzip *g, int flush)
{
	int rc;

	g->z.next_in = g->in;
	g->z.avail_in = (uInt)g->in_len;
	do {
		g->z.next_out = g->out;
		g->z.avail_out = GZIP_CHUNK;
		rc = deflate(&g->z, flush);
		if (rc == Z_STREAM_ERROR)
			return -EIO;
		rc = write_all(g->fd, g->out, GZIP_CHUNK - g->z.avail_out);
		if (rc)
			return rc;
	} while (g->z.avail_out == 0);
	g->in_len = 0;
	return 0;
}

/* Errors of deflateEnd and close are ignored here: a committed file was
 * closed (and checked) already, and an aborted one is being thrown away. */
static void release(struct mr_pprof_gzip *g)
{
	if (g->z_ready)
		(void)deflateEnd(&g->z);
	if (g->fd >= 0)
		(void)close(g->fd);
	free(g->tmp_path);
	free(g->in);
	free(g->out);
	memset(g, 0, sizeof(*g));
	g->fd = -1;
}

static int make_temp(struct mr_pprof_gzip *g)
{
	static const char suffix[] = ".XXXXXX";
	size_t len = strlen(g->path);

	g->tmp_path = malloc(len + sizeof(suffix));
	if (!g->tmp_path)
		return -ENOMEM;
	memcpy(g->tmp_path, g->path, len);
	memcpy(g->tmp_path + len, suffix, sizeof(suffix));
	g->fd = mkostemp(g->tmp_path, O_CLOEXEC);
	if (g->fd < 0) {
		free(g->tmp_path);
		g->tmp_path = NULL;
		return -errno;
	}
	if (fchmod(g->fd, GZIP_FILE_MODE) < 0)
		return -errno;
	return 0;
}

int mr_pprof_gzip_open(struct mr_pprof_gzip *g, const char *path)
{
	int rc;

	memset(g, 0, sizeof(*g));
	g->fd = -1;
	g->path = path;
	g->in = malloc(GZIP_CHUNK);
	g->out = malloc(GZIP_CHUNK);
	if (!g->in || !g->out) {
		release(g);
		return -ENOMEM;
	}
	rc = deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WINDOW_BITS, GZIP_MEM_LEVEL,
			  Z_DEFAULT_STRATEGY);
	if (rc != Z_OK) {
		release(g);
		return rc == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
	}
	g->z_ready = 1;
	rc = make_temp(g);
	if (rc)
		mr_pprof_gzip_abort(g);
	return rc;
}

void mr_pprof_gzip_write(struct mr_pprof_gzip *g, const void *data, size_t len)
{
	const unsigned char *bytes = data;

	while (!g->error && len > 0) {
		size_t n = GZIP_CHUNK - g->in_len;

		if (n > len)
			n = len;
		memcpy(g->in + g->in_len, bytes, n);
		g->in_len += n;
		bytes += n;
		len -= n;
		if (g->in_len == GZIP_CHUNK)
			g->error = deflate_input(g, Z_NO_FLUSH);
	}
}

/* Closes the file, then checks its contents reached the disk. */
static int finish(struct mr_pprof_gzip *g)
{
	int fd = g->fd;
	int rc = g->error;

	if (!rc)
		rc = deflate_input(g, Z_FINISH);
	if (rc)
		return rc;
	if (fsync(fd) < 0)
		return -errno;
	g->fd = -1;
	if (close(fd) < 0)
		return -errno;
	if (rename(g->tmp_path, g->path) < 0)
		return -errno;
	return 0;
}

int mr_pprof_gzip_commit(struct mr_pprof_gzip *g)
{
	int rc = finish(g);

	if (rc) {
		mr_pprof_gzip_abort(g);
		return rc;
	}
	release(g);
	return 0;
}

void mr_pprof_gzip_abort(struct mr_pprof_gzip *g)
{
	if (g->tmp_path)
		(void)unlink(g->tmp_path);
	release(g);
}
