/* kube_body.c - a response body as it arrives, kept up to a limit (a list
 * page of 500 pods is a few MiB; an answer past the limit is refused, not
 * cut short). */
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "kube/kube_internal.h"

#define BODY_MAX (64u << 20)

size_t mr_kube_body_write(struct kube_body *b, const char *data, size_t len)
{
	char *grown;

	if (b->too_big || b->len + len + 1 > BODY_MAX) {
		b->too_big = 1;
		return len;
	}
	grown = mr_grow_array(b->data, &b->cap, b->len + len + 1, 1);
	if (!grown)
		return 0; /* libcurl then fails the transfer with CURLE_WRITE_ERROR */
	b->data = grown;
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = 0;
	return len;
}

void mr_kube_body_reset(struct kube_body *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}
