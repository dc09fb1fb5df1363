/* spsc_queue.h - a bounded single-producer/single-consumer queue of
 * fixed-size records kept in one array that never moves. The producer (the
 * data-plane thread) copies records in or drops and counts them when the
 * queue is full; the consumer (the agent's main thread) reads runs of records
 * in place and releases them. No locks: C11 acquire/release atomics. */
#ifndef MR_BASE_SPSC_QUEUE_H
#define MR_BASE_SPSC_QUEUE_H

#include <stddef.h>
#include <stdint.h>

struct mr_spsc_queue;

struct mr_spsc_queue_counts {
	uint64_t received; /* records offered by the producer */
	uint64_t released; /* records the consumer is done with */
	uint64_t dropped;  /* offered while the queue was full (or too short) */
	uint64_t queued;   /* waiting now */
};

/* capacity must be a power of two. Returns NULL when out of memory. */
struct mr_spsc_queue *mr_spsc_queue_new(uint32_t capacity, uint32_t record_size);
void mr_spsc_queue_free(struct mr_spsc_queue *q);

/* Producer: copies one record (size bytes, at least the record size) in.
 * Returns 1, or 0 when it was dropped. */
int mr_spsc_queue_push(struct mr_spsc_queue *q, const void *record, size_t size);
/* Producer: how many records were pushed so far. */
uint64_t mr_spsc_queue_pushed(const struct mr_spsc_queue *q);

/* Consumer: the oldest queued run that is contiguous in the array (at most
 * max records); *index receives its first record's index. */
uint32_t mr_spsc_queue_peek(struct mr_spsc_queue *q, uint32_t max, uint32_t *index);
/* Consumer: frees the n oldest records (at most what is queued). */
void mr_spsc_queue_release(struct mr_spsc_queue *q, uint32_t n);

void *mr_spsc_queue_records(const struct mr_spsc_queue *q);
uint32_t mr_spsc_queue_record_size(const struct mr_spsc_queue *q);
/* Consistent at any time: received == released + dropped + queued. */
void mr_spsc_queue_counts(const struct mr_spsc_queue *q, struct mr_spsc_queue_counts *out);

#endif
