/* guarded_buffer.c - memory between two inaccessible pages, for specs of
 * parsers that must never read outside what they were given: data placed
 * so that its last byte abuts the upper guard page makes a read past its
 * end fault (and the lower guard, a read before the buffer's start), where
 * an ordinary buffer would let it pass silently. Declared in api_test.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api_test.h"
#include "base/log.h"

struct mr_guarded_buffer {
	uint8_t *map; /* the whole mapping: guard, data, guard */
	size_t map_len;
	uint8_t *data;   /* after the lower guard page */
	size_t capacity; /* whole pages */
};

mr_guarded_buffer *mr_guarded_buffer_new(size_t capacity, char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	mr_guarded_buffer *b;
	size_t pages;

	if (page <= 0)
		page = 4096;
	if (capacity == 0 || capacity > SIZE_MAX / 2) {
		mr_error(err, errlen, -EINVAL, "a guarded buffer of %zu bytes cannot be made", capacity);
		return NULL;
	}
	pages = (capacity + (size_t)page - 1) / (size_t)page;
	b = calloc(1, sizeof(*b));
	if (!b) {
		mr_error(err, errlen, -ENOMEM, "out of memory for a guarded buffer");
		return NULL;
	}
	b->capacity = pages * (size_t)page;
	b->map_len = b->capacity + 2 * (size_t)page;
	b->map = mmap(NULL, b->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->map == MAP_FAILED) {
		mr_error(err, errlen, -errno, "cannot map %zu bytes for a guarded buffer: %s", b->map_len,
			 strerror(errno));
		free(b);
		return NULL;
	}
	b->data = b->map + page;
	if (mprotect(b->data, b->capacity, PROT_READ | PROT_WRITE) != 0) {
		int rc = -errno;

		mr_error(err, errlen, rc, "cannot open a guarded buffer's pages: %s", strerror(-rc));
		munmap(b->map, b->map_len);
		free(b);
		return NULL;
	}
	return b;
}

uint8_t *mr_guarded_buffer_data(mr_guarded_buffer *b)
{
	return b->data;
}

size_t mr_guarded_buffer_capacity(const mr_guarded_buffer *b)
{
	return b->capacity;
}

void mr_guarded_buffer_free(mr_guarded_buffer *b)
{
	if (!b)
		return;
	munmap(b->map, b->map_len);
	free(b);
}
