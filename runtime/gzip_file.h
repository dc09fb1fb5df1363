/* gzip_file.h - writes a gzip-compressed file atomically: the bytes go to a
 * temporary file beside the target, which replaces the target only once
 * complete, so a failed write never leaves a truncated file behind. */
#ifndef MR_GZIP_FILE_H
#define MR_GZIP_FILE_H

#include <stddef.h>
#include <zlib.h>

struct gzip_file {
	const char *path; /* the target, owned by the caller */
	char *tmp_path;
	int fd;
	int error;        /* first negative errno met while writing, or 0 */
	z_stream z;
	int z_ready;
	unsigned char *in;  /* input gathered before each deflate call */
	size_t in_len;
	unsigned char *out;
};

/* Creates the temporary file; returns 0 or a negative errno (nothing to
 * clean up then). */
int gzip_file_open(struct gzip_file *g, const char *path);
/* Compresses len bytes; errors are kept for gzip_file_commit(). */
void gzip_file_write(struct gzip_file *g, const void *data, size_t len);
/* Finishes, syncs and renames onto the target; returns 0 or the first
 * negative errno, having removed the temporary file then. Frees g's state. */
int gzip_file_commit(struct gzip_file *g);
/* Drops everything written and frees g's state. */
void gzip_file_abort(struct gzip_file *g);

#endif
