/* hashidx.h - an open-addressing index from 32-bit hashes to dense ids.
 *
 * The caller keeps its entries in its own array (id = position) and decides
 * equality; the index only stores (hash, id) pairs, probes linearly and
 * doubles once half full, so lookups stay O(1) at millions of entries. */
#ifndef MR_HASHIDX_H
#define MR_HASHIDX_H

#include <stddef.h>
#include <stdint.h>

#define HASHIDX_NONE UINT32_MAX /* "not found", and the one id never stored */

struct hashidx_slot {
	uint32_t hash;
	uint32_t id_plus1; /* 0: empty slot */
};

struct hashidx {
	struct hashidx_slot *slots;
	size_t mask; /* slot count - 1; slot count is a power of two */
	size_t used;
};

/* Answers whether entry id equals the key the caller has in ctx. */
typedef int (*hashidx_equal_fn)(const void *ctx, uint32_t id);

uint32_t hashidx_find(const struct hashidx *h, uint32_t hash, hashidx_equal_fn equal,
		      const void *ctx);
/* Records id under hash; returns 0, -EINVAL for HASHIDX_NONE, or -ENOMEM
 * with the index unchanged. */
int hashidx_insert(struct hashidx *h, uint32_t hash, uint32_t id);
void hashidx_free(struct hashidx *h);

/* Hashing: start from HASH_SEED, mix in words or bytes, finish to 32 bits. */
#define HASH_SEED 0xcbf29ce484222325ULL

static inline uint64_t hash_word(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x100000001b3ULL;
	return h ^ (h >> 29);
}

uint64_t hash_bytes(uint64_t h, const void *data, size_t len);
uint32_t hash_finish(uint64_t h);

#endif
