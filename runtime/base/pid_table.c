/* pid_table.c - pid -> value records back to back in one array, indexed by
 * the hash index (see pid_table.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "base/hash_index.h"
#include "base/pid_table.h"

/* Where a record's value starts: past the int32_t pid, at an offset (and in
 * records of a stride) that keeps a value of up to 8-byte alignment, such as
 * a uint64_t count, aligned. */
enum { VALUE_AT = sizeof(uint64_t) };

struct mr_pid_table {
	unsigned char *records; /* each: an int32_t pid, then the value at VALUE_AT */
	size_t stride;
	size_t n, cap;
	struct mr_hash_index index;
};

struct key {
	const struct mr_pid_table *t;
	int32_t pid;
};

static uint32_t hash_pid(int32_t pid)
{
	return mr_hash_finish(mr_hash_word(MR_HASH_SEED, (uint32_t)pid));
}

static int32_t pid_at(const struct mr_pid_table *t, size_t id)
{
	int32_t pid;

	memcpy(&pid, t->records + id * t->stride, sizeof(pid));
	return pid;
}

static int pid_equal(const void *ctx, uint32_t id)
{
	const struct key *k = ctx;

	return pid_at(k->t, id) == k->pid;
}

struct mr_pid_table *mr_pid_table_new(size_t value_size)
{
	struct mr_pid_table *t = calloc(1, sizeof(*t));

	if (t)
		t->stride = (VALUE_AT + value_size + 7) & ~(size_t)7;
	return t;
}

void mr_pid_table_free(struct mr_pid_table *t)
{
	if (!t)
		return;
	free(t->records);
	mr_hash_index_free(&t->index);
	free(t);
}

static uint32_t find(const struct mr_pid_table *t, int32_t pid)
{
	struct key k = { .t = t, .pid = pid };

	return mr_hash_index_find(&t->index, hash_pid(pid), pid_equal, &k);
}

void *mr_pid_table_get(const struct mr_pid_table *t, int32_t pid)
{
	uint32_t id = find(t, pid);

	return id == MR_HASH_NONE ? NULL : t->records + id * t->stride + VALUE_AT;
}

void *mr_pid_table_put(struct mr_pid_table *t, int32_t pid, int *added)
{
	uint32_t id = find(t, pid);
	unsigned char *records, *r;

	*added = id == MR_HASH_NONE;
	if (!*added)
		return t->records + id * t->stride + VALUE_AT;
	if (t->n >= MR_HASH_NONE)
		return NULL;
	records = mr_grow_array(t->records, &t->cap, t->n + 1, t->stride);
	if (!records)
		return NULL;
	t->records = records;
	if (mr_hash_index_insert(&t->index, hash_pid(pid), (uint32_t)t->n) != 0)
		return NULL;
	r = t->records + t->n++ * t->stride;
	memset(r, 0, t->stride);
	memcpy(r, &pid, sizeof(pid));
	return r + VALUE_AT;
}

size_t mr_pid_table_count(const struct mr_pid_table *t)
{
	return t->n;
}

int mr_pid_table_remove(struct mr_pid_table *t, int32_t pid)
{
	uint32_t id = find(t, pid), last = (uint32_t)t->n - 1;
	int32_t moved;

	if (id == MR_HASH_NONE)
		return -ENOENT;
	mr_hash_index_remove(&t->index, hash_pid(pid), id);
	t->n--;
	if (id == last)
		return 0;
	/* The last record fills the hole; the index had room for it already. */
	moved = pid_at(t, last);
	mr_hash_index_remove(&t->index, hash_pid(moved), last);
	memcpy(t->records + (size_t)id * t->stride, t->records + (size_t)last * t->stride, t->stride);
	return mr_hash_index_insert(&t->index, hash_pid(moved), id);
}
