/* sym_buf.c - string blobs for the symbolizer's tables. */
#include "sym_buf.h"
#include "growarray.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int mr_str_blob_add(struct mr_str_blob *b, const char *s, size_t n, uint32_t *off)
{
	char *data;

	if (b->len + n + 1 > UINT32_MAX)
		return -E2BIG;
	data = grow_array(b->data, &b->cap, b->len + n + 1, 1);
	if (!data)
		return -ENOMEM;
	b->data = data;
	memcpy(b->data + b->len, s, n);
	b->data[b->len + n] = '\0';
	*off = (uint32_t)b->len;
	b->len += n + 1;
	return 0;
}

void mr_str_blob_free(struct mr_str_blob *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}
