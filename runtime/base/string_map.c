/* string_map.c - string-keyed map (see string_map.h): entries in one array
 * indexed by the hash index; removed entries' slots are reused. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "base/hash_index.h"
#include "base/string_map.h"

struct entry {
	char *key; /* NULL: a free slot */
	void *value;
};

struct mr_string_map {
	struct entry *entries;
	size_t nentries, entries_cap;
	uint32_t *free_ids; /* slots of removed entries, to reuse */
	size_t nfree, free_cap;
	size_t count;
	struct mr_hash_index index;
	mr_string_map_free_fn free_value;
};

struct key {
	const struct mr_string_map *m;
	const char *s;
};

static uint32_t hash_key(const char *s)
{
	return mr_hash_finish(mr_hash_bytes(MR_HASH_SEED, s, strlen(s)));
}

static int key_equal(const void *ctx, uint32_t id)
{
	const struct key *k = ctx;

	return strcmp(k->m->entries[id].key, k->s) == 0;
}

struct mr_string_map *mr_string_map_new(mr_string_map_free_fn free_value)
{
	struct mr_string_map *m = calloc(1, sizeof(*m));

	if (m)
		m->free_value = free_value;
	return m;
}

void mr_string_map_free(struct mr_string_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nentries; i++) {
		if (!m->entries[i].key)
			continue;
		if (m->free_value)
			m->free_value(m->entries[i].value);
		free(m->entries[i].key);
	}
	free(m->entries);
	free(m->free_ids);
	mr_hash_index_free(&m->index);
	free(m);
}

static uint32_t find(const struct mr_string_map *m, const char *s, uint32_t hash)
{
	struct key k = { .m = m, .s = s };

	return mr_hash_index_find(&m->index, hash, key_equal, &k);
}

void *mr_string_map_get(const struct mr_string_map *m, const char *key)
{
	uint32_t id = find(m, key, hash_key(key));

	return id == MR_HASH_NONE ? NULL : m->entries[id].value;
}

/* A slot for a new entry: a freed one, else one more at the end. */
static int new_slot(struct mr_string_map *m, uint32_t *id)
{
	struct entry *grown;

	if (m->nfree > 0) {
		*id = m->free_ids[--m->nfree];
		return 0;
	}
	if (m->nentries >= MR_HASH_NONE)
		return -ENOMEM;
	grown = mr_grow_array(m->entries, &m->entries_cap, m->nentries + 1, sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	m->entries = grown;
	*id = (uint32_t)m->nentries++;
	m->entries[*id].key = NULL;
	return 0;
}

static void release_slot(struct mr_string_map *m, uint32_t id)
{
	uint32_t *grown = mr_grow_array(m->free_ids, &m->free_cap, m->nfree + 1, sizeof(*grown));

	m->entries[id].key = NULL;
	if (!grown)
		return; /* the slot is not reused: only memory is lost */
	m->free_ids = grown;
	m->free_ids[m->nfree++] = id;
}

static struct entry *add(struct mr_string_map *m, const char *s, uint32_t hash, void *value)
{
	char *copy = strdup(s);
	uint32_t id;

	if (!copy || new_slot(m, &id) != 0) {
		free(copy);
		return NULL;
	}
	if (mr_hash_index_insert(&m->index, hash, id) != 0) {
		free(copy);
		release_slot(m, id);
		return NULL;
	}
	m->entries[id] = (struct entry){ .key = copy, .value = value };
	m->count++;
	return &m->entries[id];
}

int mr_string_map_put(struct mr_string_map *m, const char *key, void *value)
{
	uint32_t hash = hash_key(key);
	uint32_t id = find(m, key, hash);

	if (id != MR_HASH_NONE) {
		m->entries[id].value = value;
		return 0;
	}
	return add(m, key, hash, value) ? 0 : -ENOMEM;
}

const char *mr_string_map_intern(struct mr_string_map *m, const char *key)
{
	uint32_t hash = hash_key(key);
	uint32_t id = find(m, key, hash);
	struct entry *e = id != MR_HASH_NONE ? &m->entries[id] : add(m, key, hash, NULL);

	return e ? e->key : NULL;
}

void *mr_string_map_take(struct mr_string_map *m, const char *key)
{
	uint32_t hash = hash_key(key);
	uint32_t id = find(m, key, hash);
	void *value;

	if (id == MR_HASH_NONE)
		return NULL;
	value = m->entries[id].value;
	mr_hash_index_remove(&m->index, hash, id);
	free(m->entries[id].key);
	release_slot(m, id);
	m->count--;
	return value;
}

size_t mr_string_map_count(const struct mr_string_map *m)
{
	return m->count;
}
