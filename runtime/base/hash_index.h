/* hash_index.h - the one hash table of the runtime: an open-addressing index
 * from 32-bit hashes to dense ids.
 *
 * The caller keeps its entries in its own array (id = position) and decides
 * equality; the index only stores (hash, id) pairs, probes linearly and
 * doubles once half full, so lookups stay O(1) at millions of entries.
 * Removal shifts the following slots back, so no tombstones accumulate. */
#ifndef MR_BASE_HASH_INDEX_H
#define MR_BASE_HASH_INDEX_H

#include <stddef.h>
#include <stdint.h>

#define MR_HASH_NONE UINT32_MAX /* "not found", and the one id never stored */

struct mr_hash_index_slot {
	uint32_t hash;
	uint32_t id_plus1; /* 0: empty slot */
};

struct mr_hash_index {
	struct mr_hash_index_slot *slots;
	size_t mask; /* slot count - 1; slot count is a power of two */
	size_t used;
};

/* Answers whether entry id equals the key the caller has in ctx. */
typedef int (*mr_hash_index_equal_fn)(const void *ctx, uint32_t id);

uint32_t mr_hash_index_find(const struct mr_hash_index *h, uint32_t hash, mr_hash_index_equal_fn equal,
			    const void *ctx);
/* Records id under hash; returns 0, -EINVAL for MR_HASH_NONE, or -ENOMEM
 * with the index unchanged. */
int mr_hash_index_insert(struct mr_hash_index *h, uint32_t hash, uint32_t id);
/* Forgets id, recorded under hash; returns 0, or -ENOENT when it is not there. */
int mr_hash_index_remove(struct mr_hash_index *h, uint32_t hash, uint32_t id);
void mr_hash_index_free(struct mr_hash_index *h);

/* Hashing: start from MR_HASH_SEED, mix in words or bytes, finish to 32 bits. */
#define MR_HASH_SEED 0xcbf29ce484222325ULL

static inline uint64_t mr_hash_word(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0x100000001b3ULL;
	return h ^ (h >> 29);
}

uint64_t mr_hash_bytes(uint64_t h, const void *data, size_t len);
uint32_t mr_hash_finish(uint64_t h);

#endif
