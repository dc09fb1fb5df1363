/* spsc_queue.c - the bounded SPSC record queue (see spsc_queue.h). head
 * and tail count records pushed and released since the start; they only
 * grow, and their difference is the fill. Each side writes one of them and
 * keeps it on its own cache line. */
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/spsc_queue.h"

#define CACHE_LINE 64

struct mr_spsc_queue {
	unsigned char *records;
	uint32_t record_size;
	uint32_t mask;
	/* Written by the producer. */
	alignas(CACHE_LINE) _Atomic uint64_t head;
	_Atomic uint64_t dropped;
	uint64_t tail_seen; /* the producer's last look at tail */
	/* Written by the consumer. */
	alignas(CACHE_LINE) _Atomic uint64_t tail;
};

static size_t round_to_line(size_t n)
{
	return (n + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;
}

struct mr_spsc_queue *mr_spsc_queue_new(uint32_t capacity, uint32_t record_size)
{
	size_t bytes = round_to_line((size_t)capacity * record_size);
	struct mr_spsc_queue *q = aligned_alloc(CACHE_LINE, round_to_line(sizeof(*q)));

	if (!q)
		return NULL;
	memset(q, 0, sizeof(*q));
	q->records = aligned_alloc(CACHE_LINE, bytes);
	if (!q->records) {
		free(q);
		return NULL;
	}
	memset(q->records, 0, bytes);
	q->record_size = record_size;
	q->mask = capacity - 1;
	return q;
}

void mr_spsc_queue_free(struct mr_spsc_queue *q)
{
	if (!q)
		return;
	free(q->records);
	free(q);
}

static void count_drop(struct mr_spsc_queue *q)
{
	uint64_t n = atomic_load_explicit(&q->dropped, memory_order_relaxed);

	atomic_store_explicit(&q->dropped, n + 1, memory_order_relaxed);
}

int mr_spsc_queue_push(struct mr_spsc_queue *q, const void *record, size_t size)
{
	uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);

	if (size < q->record_size) {
		count_drop(q);
		return 0;
	}
	if (head - q->tail_seen > q->mask) {
		/* Acquire: the consumer is done reading the slots it released. */
		q->tail_seen = atomic_load_explicit(&q->tail, memory_order_acquire);
		if (head - q->tail_seen > q->mask) {
			count_drop(q);
			return 0;
		}
	}
	memcpy(q->records + (size_t)(head & q->mask) * q->record_size, record, q->record_size);
	/* Release: the record is in place before the consumer can see it. */
	atomic_store_explicit(&q->head, head + 1, memory_order_release);
	return 1;
}

uint64_t mr_spsc_queue_pushed(const struct mr_spsc_queue *q)
{
	return atomic_load_explicit(&q->head, memory_order_relaxed);
}

uint32_t mr_spsc_queue_peek(struct mr_spsc_queue *q, uint32_t max, uint32_t *index)
{
	uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&q->head, memory_order_acquire);
	uint32_t at = (uint32_t)(tail & q->mask);
	uint64_t run = (uint64_t)q->mask + 1 - at;

	if (head - tail < run)
		run = head - tail;
	if (max < run)
		run = max;
	*index = at;
	return (uint32_t)run;
}

void mr_spsc_queue_release(struct mr_spsc_queue *q, uint32_t n)
{
	uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&q->head, memory_order_acquire);

	if (n > head - tail)
		n = (uint32_t)(head - tail);
	atomic_store_explicit(&q->tail, tail + n, memory_order_release);
}

void *mr_spsc_queue_records(const struct mr_spsc_queue *q)
{
	return q->records;
}

uint32_t mr_spsc_queue_record_size(const struct mr_spsc_queue *q)
{
	return q->record_size;
}

void mr_spsc_queue_counts(const struct mr_spsc_queue *q, struct mr_spsc_queue_counts *out)
{
	/* tail first: it never passes head, so the fill is never negative. */
	uint64_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
	uint64_t dropped = atomic_load_explicit(&q->dropped, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&q->head, memory_order_acquire);

	out->released = tail;
	out->dropped = dropped;
	out->queued = head - tail;
	out->received = head + dropped;
}
