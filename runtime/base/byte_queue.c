/* byte_queue.c - the bounded SPSC queue of variable-size records (see
 * byte_queue.h). head and tail are byte positions since the start (they only
 * grow; modulo the capacity they index the array), with record counts beside
 * them. Each side writes its own and keeps them on its own cache line. The
 * array is an anonymous mapping: its pages become resident as the producer
 * first writes them, and mr_byte_queue_trim gives back those of the free
 * space, which only the producer writes. */
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/byte_queue.h"

#define CACHE_LINE 64
#define SKIP UINT32_MAX /* prefix of the unused tail before a wrap */

struct mr_byte_queue {
	unsigned char *bytes;
	uint32_t capacity;
	/* Written by the producer. */
	alignas(CACHE_LINE) _Atomic uint64_t head;
	_Atomic uint64_t head_records;
	_Atomic uint64_t dropped;
	uint64_t tail_seen; /* the producer's last look at tail */
	/* Written by the consumer. */
	alignas(CACHE_LINE) _Atomic uint64_t tail;
	_Atomic uint64_t tail_records;
};

static uint64_t align8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

struct mr_byte_queue *mr_byte_queue_new(uint32_t capacity)
{
	struct mr_byte_queue *q;

	if (capacity < 4096 || (capacity & (capacity - 1)))
		return NULL;
	q = aligned_alloc(CACHE_LINE, (sizeof(*q) + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE);
	if (!q)
		return NULL;
	memset(q, 0, sizeof(*q));
	q->bytes = mmap(NULL, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			-1, 0);
	if (q->bytes == MAP_FAILED) {
		free(q);
		return NULL;
	}
	q->capacity = capacity;
	return q;
}

void mr_byte_queue_free(struct mr_byte_queue *q)
{
	if (!q)
		return;
	munmap(q->bytes, q->capacity); /* cannot fail on the mapping made by new */
	free(q);
}

static int drop(struct mr_byte_queue *q)
{
	uint64_t n = atomic_load_explicit(&q->dropped, memory_order_relaxed);

	atomic_store_explicit(&q->dropped, n + 1, memory_order_relaxed);
	return 0;
}

static void put_prefix(struct mr_byte_queue *q, uint64_t at, uint32_t size)
{
	uint32_t prefix[2] = { size, 0 };

	memcpy(q->bytes + at, prefix, sizeof(prefix));
}

/* Whether need more bytes fit, looking at the consumer's tail again only
 * when the last look says they do not. */
static int has_room(struct mr_byte_queue *q, uint64_t head, uint64_t need)
{
	if (head + need - q->tail_seen <= q->capacity)
		return 1;
	/* Acquire: the consumer is done reading what it released. */
	q->tail_seen = atomic_load_explicit(&q->tail, memory_order_acquire);
	return head + need - q->tail_seen <= q->capacity;
}

int mr_byte_queue_push(struct mr_byte_queue *q, const void *record, size_t size)
{
	uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
	uint64_t need = align8(MR_BYTE_QUEUE_PREFIX + (uint64_t)size);
	uint64_t at = head & (q->capacity - 1), skip = 0;
	uint64_t records = atomic_load_explicit(&q->head_records, memory_order_relaxed);

	if (size >= SKIP || need > q->capacity / 2)
		return drop(q);
	if (at + need > q->capacity)
		skip = q->capacity - at; /* wrap: the record starts at 0 */
	if (!has_room(q, head, skip + need))
		return drop(q);
	if (skip) {
		put_prefix(q, at, SKIP);
		at = 0;
	}
	put_prefix(q, at, (uint32_t)size);
	memcpy(q->bytes + at + MR_BYTE_QUEUE_PREFIX, record, size);
	atomic_store_explicit(&q->head_records, records + 1, memory_order_relaxed);
	/* Release: the record is in place before the consumer can see it. */
	atomic_store_explicit(&q->head, head + skip + need, memory_order_release);
	return 1;
}

uint64_t mr_byte_queue_pushed(const struct mr_byte_queue *q)
{
	return atomic_load_explicit(&q->head_records, memory_order_relaxed);
}

static uint32_t prefix_at(const struct mr_byte_queue *q, uint64_t at)
{
	uint32_t size;

	memcpy(&size, q->bytes + at, sizeof(size));
	return size;
}

uint32_t mr_byte_queue_peek(struct mr_byte_queue *q, uint32_t max, uint32_t *offset, uint32_t *bytes)
{
	uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&q->head, memory_order_acquire);
	uint64_t at = tail & (q->capacity - 1), end;
	uint32_t n = 0;

	if (tail != head && prefix_at(q, at) == SKIP) {
		tail += q->capacity - at; /* the consumer owns tail: step over the marker */
		atomic_store_explicit(&q->tail, tail, memory_order_release);
		at = 0;
	}
	end = at;
	while (n < max && tail + (end - at) < head && end < q->capacity && prefix_at(q, end) != SKIP) {
		end += align8(MR_BYTE_QUEUE_PREFIX + (uint64_t)prefix_at(q, end));
		n++;
	}
	*offset = (uint32_t)at;
	*bytes = (uint32_t)(end - at);
	return n;
}

void mr_byte_queue_release(struct mr_byte_queue *q, uint32_t n, uint32_t bytes)
{
	uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&q->head, memory_order_acquire);
	uint64_t records = atomic_load_explicit(&q->tail_records, memory_order_relaxed);

	if (bytes > head - tail)
		bytes = (uint32_t)(head - tail);
	atomic_store_explicit(&q->tail_records, records + n, memory_order_relaxed);
	atomic_store_explicit(&q->tail, tail + bytes, memory_order_release);
}

/* Gives back the pages of [from, to) (array offsets, from <= to), whole
 * pages inside it only. */
static void discard(struct mr_byte_queue *q, uint64_t from, uint64_t to, uint64_t page)
{
	from = (from + page - 1) & ~(page - 1);
	to &= ~(page - 1);
	/* It fails only on arguments outside the mapping, which these are not;
	 * a range not given back stays resident, nothing is lost. */
	if (from < to)
		(void)madvise(q->bytes + from, to - from, MADV_DONTNEED);
}

void mr_byte_queue_trim(struct mr_byte_queue *q, uint32_t keep)
{
	uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
	/* Acquire: the consumer is done with what it released, so the free
	 * space below can be dropped. */
	uint64_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), mask = q->capacity - 1;
	uint64_t from, to;

	if (head - tail + keep + 2 * page >= q->capacity)
		return; /* no whole page of free space past what is kept */
	/* The free space runs from head + keep (kept for the next records) to
	 * tail + capacity, modulo the capacity; discard keeps the partial pages
	 * at both ends. */
	from = (head + keep) & mask;
	to = (tail + q->capacity) & mask;
	if (from < to) {
		discard(q, from, to, page);
	} else {
		discard(q, from, q->capacity, page);
		discard(q, 0, to, page);
	}
}

uint64_t mr_byte_queue_pushed_bytes(const struct mr_byte_queue *q)
{
	return atomic_load_explicit(&q->head, memory_order_relaxed);
}

void *mr_byte_queue_storage(const struct mr_byte_queue *q)
{
	return q->bytes;
}

void mr_byte_queue_counts(const struct mr_byte_queue *q, struct mr_byte_queue_counts *out)
{
	/* tail first: it never passes head, so the fill is never negative. */
	uint64_t released = atomic_load_explicit(&q->tail_records, memory_order_acquire);
	uint64_t dropped = atomic_load_explicit(&q->dropped, memory_order_relaxed);
	uint64_t pushed = atomic_load_explicit(&q->head_records, memory_order_acquire);

	out->released = released;
	out->dropped = dropped;
	out->queued = pushed - released;
	out->received = pushed + dropped;
}
