/* pprof_gzip.c - gzip stream into an output file (see pprof_gzip.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "files/output_file.h"
#include "pprof/pprof_gzip.h"

enum {
	GZIP_CHUNK = 64 * 1024,
	GZIP_WINDOW_BITS = 15 + 16, /* a 32 KiB window and a gzip header */
	GZIP_MEM_LEVEL = 8,
};

/* Runs deflate over the gathered input with flush (Z_NO_FLUSH or Z_FINISH)
 * and writes what comes out. */
static int deflate_input(struct mr_pprof_gzip *g, int flush)
{
	int rc;

	g->z.next_in = g->in;
	g->z.avail_in = (uInt)g->in_len;
	do {
		g->z.next_out = g->buf;
		g->z.avail_out = GZIP_CHUNK;
		rc = deflate(&g->z, flush);
		if (rc == Z_STREAM_ERROR)
			return -EIO;
		rc = mr_output_write_all(g->out, g->buf, GZIP_CHUNK - g->z.avail_out);
		if (rc)
			return rc;
	} while (g->z.avail_out == 0);
	g->in_len = 0;
	return 0;
}

/* deflateEnd's result is not checked: it only reports a stream that was not
 * finished, which the caller knows already. */
static void release(struct mr_pprof_gzip *g)
{
	if (g->z_ready)
		(void)deflateEnd(&g->z);
	free(g->in);
	free(g->buf);
	memset(g, 0, sizeof(*g));
}

int mr_pprof_gzip_open(struct mr_pprof_gzip *g, mr_output *out)
{
	int rc;

	memset(g, 0, sizeof(*g));
	g->out = out;
	g->in = malloc(GZIP_CHUNK);
	g->buf = malloc(GZIP_CHUNK);
	if (!g->in || !g->buf) {
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
	return 0;
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

int mr_pprof_gzip_close(struct mr_pprof_gzip *g)
{
	int rc = g->error ? g->error : deflate_input(g, Z_FINISH);

	release(g);
	return rc;
}
