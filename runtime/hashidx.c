/* hashidx.c - open-addressing hash index of dense ids (see hashidx.h). */
#include <errno.h>
#include <stdlib.h>

#include "hashidx.h"

enum { HASHIDX_MIN_SLOTS = 64 };

uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
{
	const unsigned char *b = data;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint32_t hash_finish(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (uint32_t)h;
}

static void place(struct hashidx_slot *slots, size_t mask, struct hashidx_slot s)
{
	size_t i = s.hash & mask;

	while (slots[i].id_plus1)
		i = (i + 1) & mask;
	slots[i] = s;
}

static int grow(struct hashidx *h)
{
	size_t n = h->slots ? (h->mask + 1) * 2 : HASHIDX_MIN_SLOTS;
	struct hashidx_slot *slots;
	size_t i;

	if (n > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; h->slots && i <= h->mask; i++)
		if (h->slots[i].id_plus1)
			place(slots, n - 1, h->slots[i]);
	free(h->slots);
	h->slots = slots;
	h->mask = n - 1;
	return 0;
}

uint32_t hashidx_find(const struct hashidx *h, uint32_t hash, hashidx_equal_fn equal,
		      const void *ctx)
{
	size_t i;

	if (!h->slots)
		return HASHIDX_NONE;
	for (i = hash & h->mask; h->slots[i].id_plus1; i = (i + 1) & h->mask) {
		const struct hashidx_slot *s = &h->slots[i];

		if (s->hash == hash && equal(ctx, s->id_plus1 - 1))
			return s->id_plus1 - 1;
	}
	return HASHIDX_NONE;
}

int hashidx_insert(struct hashidx *h, uint32_t hash, uint32_t id)
{
	struct hashidx_slot s = { .hash = hash, .id_plus1 = id + 1 };
	int err;

	if (id == HASHIDX_NONE)
		return -EINVAL;
	if (!h->slots || (h->used + 1) * 2 > h->mask + 1) {
		err = grow(h);
		if (err)
			return err;
	}
	place(h->slots, h->mask, s);
	h->used++;
	return 0;
}

void hashidx_free(struct hashidx *h)
{
	free(h->slots);
	h->slots = NULL;
	h->mask = 0;
	h->used = 0;
}
