/* pprof_gzip.h - a gzip stream into an output file (files/output_file.h):
 * pprof files are gzipped protobuf. */
#ifndef MR_PPROF_PPROF_GZIP_H
#define MR_PPROF_PPROF_GZIP_H

#include <stddef.h>
#include <zlib.h>

#include "api.h"

struct mr_pprof_gzip {
	mr_output *out;
	int error; /* first negative errno met while compressing or writing, or 0 */
	z_stream z;
	int z_ready;
	unsigned char *in; /* input gathered before each deflate call */
	size_t in_len;
	unsigned char *buf; /* deflate's output */
};

/* Starts a stream into out (which stays the caller's); 0 or -ENOMEM. */
int mr_pprof_gzip_open(struct mr_pprof_gzip *g, mr_output *out);
/* Compresses len bytes; errors are kept for mr_pprof_gzip_close(). */
void mr_pprof_gzip_write(struct mr_pprof_gzip *g, const void *data, size_t len);
/* Flushes the rest, frees g's state; returns 0 or the first negative errno. */
int mr_pprof_gzip_close(struct mr_pprof_gzip *g);

#endif
