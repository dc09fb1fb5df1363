/* hash_index.c - open-addressing hash index of dense ids (see hash_index.h). */
#include <errno.h>
#include <stdlib.h>

#include "base/hash_index.h"

enum { HASH_INDEX_MIN_SLOTS = 64 };

uint64_t mr_hash_bytes(uint64_t h, const void *data, size_t len)
{
	const unsigned char *b = data;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint32_t mr_hash_finish(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (uint32_t)h;
}

static void place(struct mr_hash_index_slot *slots, size_t mask, struct mr_hash_index_slot s)
{
	size_t i = s.hash & mask;

	while (slots[i].id_plus1)
		i = (i + 1) & mask;
	slots[i] = s;
}

static int grow(struct mr_hash_index *h)
{
	size_t n = h->slots ? (h->mask + 1) * 2 : HASH_INDEX_MIN_SLOTS;
	struct mr_hash_index_slot *slots;
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

uint32_t mr_hash_index_find(const struct mr_hash_index *h, uint32_t hash, mr_hash_index_equal_fn equal,
			    const void *ctx)
{
	size_t i;

	if (!h->slots)
		return MR_HASH_NONE;
	for (i = hash & h->mask; h->slots[i].id_plus1; i = (i + 1) & h->mask) {
		const struct mr_hash_index_slot *s = &h->slots[i];

		if (s->hash == hash && equal(ctx, s->id_plus1 - 1))
			return s->id_plus1 - 1;
	}
	return MR_HASH_NONE;
}

int mr_hash_index_insert(struct mr_hash_index *h, uint32_t hash, uint32_t id)
{
	struct mr_hash_index_slot s = { .hash = hash, .id_plus1 = id + 1 };
	int err;

	if (id == MR_HASH_NONE)
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

/* Slot i was emptied: moves back every later slot of the run that would no
 * longer be found past the hole (Knuth's deletion for linear probing). */
static void close_gap(struct mr_hash_index *h, size_t hole)
{
	size_t i = hole;

	for (;;) {
		i = (i + 1) & h->mask;
		if (!h->slots[i].id_plus1)
			return;
		size_t home = h->slots[i].hash & h->mask;

		/* The entry stays when its home lies cyclically in (hole, i]. */
		if (hole <= i ? (hole < home && home <= i) : (hole < home || home <= i))
			continue;
		h->slots[hole] = h->slots[i];
		h->slots[i].id_plus1 = 0;
		hole = i;
	}
}

int mr_hash_index_remove(struct mr_hash_index *h, uint32_t hash, uint32_t id)
{
	size_t i;

	if (!h->slots)
		return -ENOENT;
	for (i = hash & h->mask; h->slots[i].id_plus1; i = (i + 1) & h->mask) {
		if (h->slots[i].hash == hash && h->slots[i].id_plus1 == id + 1) {
			h->slots[i].id_plus1 = 0;
			h->used--;
			close_gap(h, i);
			return 0;
		}
	}
	return -ENOENT;
}

void mr_hash_index_free(struct mr_hash_index *h)
{
	free(h->slots);
	h->slots = NULL;
	h->mask = 0;
	h->used = 0;
}
