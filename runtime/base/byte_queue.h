/* byte_queue.h - a bounded single-producer/single-consumer queue of records
 * of varying size in one byte array that never moves: the network stream's
 * socket data, whose records are a header and as many payload bytes as were
 * copied. Each record is stored after an 8-byte prefix holding its size and
 * starts at a multiple of 8; a record that would cross the array's end
 * starts again at its beginning (a skip marker fills the tail). The producer
 * drops and counts what does not fit; the consumer reads runs of records in
 * place and releases them. No locks: C11 acquire/release atomics. Memory is
 * taken as records first reach a part of the array and given back by the
 * producer's mr_byte_queue_trim, so an idle queue holds little. */
#ifndef MR_BASE_BYTE_QUEUE_H
#define MR_BASE_BYTE_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#define MR_BYTE_QUEUE_PREFIX 8u /* bytes before each record: uint32_t size, uint32_t reserved */

struct mr_byte_queue;

struct mr_byte_queue_counts {
	uint64_t received; /* records offered by the producer */
	uint64_t released; /* records the consumer is done with */
	uint64_t dropped;  /* offered while there was no room (or larger than the queue allows) */
	uint64_t queued;   /* waiting now */
};

/* capacity (bytes) must be a power of two, at least 4096. NULL when out of memory. */
struct mr_byte_queue *mr_byte_queue_new(uint32_t capacity);
void mr_byte_queue_free(struct mr_byte_queue *q);

/* Producer: copies one record of size bytes in. 1, or 0 when it was dropped. */
int mr_byte_queue_push(struct mr_byte_queue *q, const void *record, size_t size);
/* Producer: records pushed so far. */
uint64_t mr_byte_queue_pushed(const struct mr_byte_queue *q);

/* Consumer: the oldest run of queued records that is contiguous in the array,
 * at most max records: returns how many, with the byte offset of the first
 * one's prefix in *offset and the run's length in bytes (prefixes and padding
 * included) in *bytes. A record's data is at offset + MR_BYTE_QUEUE_PREFIX; the
 * next prefix at that plus its size rounded up to 8. */
uint32_t mr_byte_queue_peek(struct mr_byte_queue *q, uint32_t max, uint32_t *offset, uint32_t *bytes);
/* Consumer: frees the oldest n records and bytes (as peek gave them). */
void mr_byte_queue_release(struct mr_byte_queue *q, uint32_t n, uint32_t bytes);

/* Producer: gives back the memory of the free space but keep bytes after
 * the newest record (the next ones' room); those pages become resident
 * again when records reach them. */
void mr_byte_queue_trim(struct mr_byte_queue *q, uint32_t keep);
/* Producer: the bytes the queue's records took so far (prefixes, padding and
 * the tails skipped at a wrap included). */
uint64_t mr_byte_queue_pushed_bytes(const struct mr_byte_queue *q);

void *mr_byte_queue_storage(const struct mr_byte_queue *q);
/* Consistent at any time: received == released + dropped + queued. */
void mr_byte_queue_counts(const struct mr_byte_queue *q, struct mr_byte_queue_counts *out);

#endif
