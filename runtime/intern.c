/* intern.c - string interner backed by one text buffer (see intern.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "growarray.h"
#include "intern.h"

struct intern_key {
	const struct intern *in;
	const char *s;
};

static int key_equal(const void *ctx, uint32_t id)
{
	const struct intern_key *k = ctx;

	return strcmp(k->in->text + k->in->offsets[id], k->s) == 0;
}

static uint32_t append(struct intern *in, const char *s, uint32_t hash)
{
	size_t len = strlen(s) + 1;
	char *text;
	size_t *offsets;

	if (in->count >= HASHIDX_NONE || len > SIZE_MAX - in->text_len)
		return HASHIDX_NONE;
	text = grow_array(in->text, &in->text_cap, in->text_len + len, 1);
	if (!text)
		return HASHIDX_NONE;
	in->text = text;
	offsets = grow_array(in->offsets, &in->offsets_cap, in->count + 1, sizeof(*offsets));
	if (!offsets)
		return HASHIDX_NONE;
	in->offsets = offsets;
	if (hashidx_insert(&in->index, hash, (uint32_t)in->count))
		return HASHIDX_NONE;
	memcpy(in->text + in->text_len, s, len);
	in->offsets[in->count] = in->text_len;
	in->text_len += len;
	return (uint32_t)in->count++;
}

uint32_t intern_add(struct intern *in, const char *s)
{
	struct intern_key key = { .in = in, .s = s ? s : "" };
	uint32_t hash = hash_finish(hash_bytes(HASH_SEED, key.s, strlen(key.s)));
	uint32_t id = hashidx_find(&in->index, hash, key_equal, &key);

	if (id != HASHIDX_NONE)
		return id;
	return append(in, key.s, hash);
}

int intern_init(struct intern *in)
{
	memset(in, 0, sizeof(*in));
	if (intern_add(in, "") != 0) {
		intern_free(in);
		return -ENOMEM;
	}
	return 0;
}

void intern_free(struct intern *in)
{
	free(in->text);
	free(in->offsets);
	hashidx_free(&in->index);
	memset(in, 0, sizeof(*in));
}

const char *intern_get(const struct intern *in, uint32_t id)
{
	if (id >= in->count)
		return "";
	return in->text + in->offsets[id];
}
