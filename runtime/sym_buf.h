/* sym_buf.h - string blobs for the symbolizer's tables (kallsyms, perf maps):
 * strings are stored back to back and named by offset. */
#ifndef MR_SYM_BUF_H
#define MR_SYM_BUF_H

#include <stddef.h>
#include <stdint.h>

struct mr_str_blob {
	char *data;
	size_t len;
	size_t cap;
};

/* Appends s[0..n) and a NUL; *off receives its offset. 0, -ENOMEM or -E2BIG. */
int mr_str_blob_add(struct mr_str_blob *b, const char *s, size_t n, uint32_t *off);
void mr_str_blob_free(struct mr_str_blob *b);

#endif
