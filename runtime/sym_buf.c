/* sym_buf.c - growable arrays and string blobs for the symbolizer's tables. */
#include "sym_buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int mr_sym_grow(void **array, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	p = realloc(*array, ncap * elem);
	if (!p)
		return -ENOMEM;
	*array = p;
	*cap = ncap;
	return 0;
}

int mr_str_blob_add(struct mr_str_blob *b, const char *s, size_t n, uint32_t *off)
{
	void *data = b->data;
	int rc;

	if (b->len + n + 1 > UINT32_MAX)
		return -E2BIG;
	rc = mr_sym_grow(&data, &b->cap, b->len + n + 1, 1);
	if (rc < 0)
		return rc;
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
