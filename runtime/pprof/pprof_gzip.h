/* pprof_gzip.h - writes a gzip-compressed file atomically: the bytes go to a
 * temporary file beside the target, which replaces the target only once
 * complete, so a failed write never leaves a truncated file behind. */
#ifndef MR_PPROF_PPROF_GZIP_H
#define MR_PPROF_PPROF_GZIP_H

#include <stddef.h>
#include <zlib.h>

struct mr_pprof_gzip {
	const char *path; /* the target, owned by the caller */
	char *tmp_path;
	int fd;
	int error; /* first negative errno met while writing, or 0 */
	z_stream z;
	int z_ready;
	unsigned char *in; /* input gathered before each deflate call */
	size_t in_len;
	unsigned char *out;
};

/* Creates the temporary file; returns 0 or a negative errno (nothing to
 * clean up then). */
int mr_pprof_gzip_open(struct mr_pprof_gzip *g, const char *path);
/* Compresses len bytes; errors are kept for mr_pprof_gzip_commit(). */
void mr_pprof_gzip_write(struct mr_pprof_gzip *g, const void *data, size_t len);
/* Finishes, syncs and renames onto the target; returns 0 or the first
 * negative errno, having removed the temporary file then. Frees g's state. */
int mr_pprof_gzip_commit(struct mr_pprof_gzip *g);
/* Drops everything written and frees g's state. */
void mr_pprof_gzip_abort(struct mr_pprof_gzip *g);

#endif
