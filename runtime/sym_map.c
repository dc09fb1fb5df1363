/* sym_map.c - a chained hash map with string keys (FNV-1a), doubling its
 * bucket array when it holds more entries than buckets. */
#include "sym_map.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	struct entry *next;
	void *value;
	uint64_t hash;
	char key[];
};

struct mr_sym_map {
	struct entry **buckets;
	size_t nbuckets;
	size_t count;
	mr_sym_map_free_fn free_value;
};

static uint64_t hash_key(const char *key)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 1099511628211ULL;
	return h;
}

struct mr_sym_map *mr_sym_map_new(mr_sym_map_free_fn free_value)
{
	struct mr_sym_map *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->nbuckets = 64;
	m->buckets = calloc(m->nbuckets, sizeof(*m->buckets));
	if (!m->buckets) {
		free(m);
		return NULL;
	}
	m->free_value = free_value;
	return m;
}

void mr_sym_map_free(struct mr_sym_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct entry *e = m->buckets[i];

		while (e) {
			struct entry *next = e->next;

			if (m->free_value)
				m->free_value(e->value);
			free(e);
			e = next;
		}
	}
	free(m->buckets);
	free(m);
}

static struct entry **find_slot(const struct mr_sym_map *m, const char *key, uint64_t h)
{
	struct entry **slot = &m->buckets[h & (m->nbuckets - 1)];

	while (*slot && ((*slot)->hash != h || strcmp((*slot)->key, key) != 0))
		slot = &(*slot)->next;
	return slot;
}

void *mr_sym_map_get(const struct mr_sym_map *m, const char *key)
{
	struct entry **slot = find_slot(m, key, hash_key(key));

	return *slot ? (*slot)->value : NULL;
}

static void grow(struct mr_sym_map *m)
{
	size_t n = m->nbuckets * 2;
	struct entry **b = calloc(n, sizeof(*b));

	if (!b)
		return; /* keep the longer chains; still correct */
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct entry *e = m->buckets[i];

		while (e) {
			struct entry *next = e->next;

			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
			e = next;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = n;
}

static struct entry *add(struct mr_sym_map *m, const char *key, uint64_t h, void *value)
{
	size_t len = strlen(key);
	struct entry *e = malloc(sizeof(*e) + len + 1);
	struct entry **slot;

	if (!e)
		return NULL;
	memcpy(e->key, key, len + 1);
	e->value = value;
	e->hash = h;
	slot = &m->buckets[h & (m->nbuckets - 1)];
	e->next = *slot;
	*slot = e;
	m->count++;
	if (m->count > m->nbuckets)
		grow(m);
	return e;
}

int mr_sym_map_put(struct mr_sym_map *m, const char *key, void *value)
{
	uint64_t h = hash_key(key);
	struct entry **slot = find_slot(m, key, h);

	if (*slot) {
		(*slot)->value = value;
		return 0;
	}
	return add(m, key, h, value) ? 0 : -ENOMEM;
}

const char *mr_sym_map_intern(struct mr_sym_map *m, const char *key)
{
	uint64_t h = hash_key(key);
	struct entry **slot = find_slot(m, key, h);
	struct entry *e = *slot ? *slot : add(m, key, h, NULL);

	return e ? e->key : NULL;
}

void *mr_sym_map_take(struct mr_sym_map *m, const char *key)
{
	struct entry **slot = find_slot(m, key, hash_key(key));
	struct entry *e = *slot;
	void *value;

	if (!e)
		return NULL;
	*slot = e->next;
	value = e->value;
	free(e);
	m->count--;
	return value;
}

size_t mr_sym_map_count(const struct mr_sym_map *m)
{
	return m->count;
}
