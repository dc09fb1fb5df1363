/* intern.c - string interner backed by one text buffer (see intern.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "base/intern.h"

struct mr_intern_key {
	const struct mr_intern *in;
	const char *s;
};

static int key_equal(const void *ctx, uint32_t id)
{
	const struct mr_intern_key *k = ctx;

	return strcmp(k->in->text + k->in->offsets[id], k->s) == 0;
}

static uint32_t append(struct mr_intern *in, const char *s, uint32_t hash)
{
	size_t len = strlen(s) + 1;
	char *text;
	size_t *offsets;

	if (in->count >= MR_HASH_NONE || len > SIZE_MAX - in->text_len)
		return MR_HASH_NONE;
	text = mr_grow_array(in->text, &in->text_cap, in->text_len + len, 1);
	if (!text)
		return MR_HASH_NONE;
	in->text = text;
	offsets = mr_grow_array(in->offsets, &in->offsets_cap, in->count + 1, sizeof(*offsets));
	if (!offsets)
		return MR_HASH_NONE;
	in->offsets = offsets;
	if (mr_hash_index_insert(&in->index, hash, (uint32_t)in->count))
		return MR_HASH_NONE;
	memcpy(in->text + in->text_len, s, len);
	in->offsets[in->count] = in->text_len;
	in->text_len += len;
	return (uint32_t)in->count++;
}

uint32_t mr_intern_add(struct mr_intern *in, const char *s)
{
	struct mr_intern_key key = { .in = in, .s = s ? s : "" };
	uint32_t hash = mr_hash_finish(mr_hash_bytes(MR_HASH_SEED, key.s, strlen(key.s)));
	uint32_t id = mr_hash_index_find(&in->index, hash, key_equal, &key);

	if (id != MR_HASH_NONE)
		return id;
	return append(in, key.s, hash);
}

int mr_intern_init(struct mr_intern *in)
{
	memset(in, 0, sizeof(*in));
	if (mr_intern_add(in, "") != 0) {
		mr_intern_free(in);
		return -ENOMEM;
	}
	return 0;
}

void mr_intern_free(struct mr_intern *in)
{
	free(in->text);
	free(in->offsets);
	mr_hash_index_free(&in->index);
	memset(in, 0, sizeof(*in));
}

const char *mr_intern_get(const struct mr_intern *in, uint32_t id)
{
	if (id >= in->count)
		return "";
	return in->text + in->offsets[id];
}
