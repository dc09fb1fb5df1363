/* grow_array.h - allocation and growth of heap arrays of back-to-back elements. */
#ifndef MR_BASE_GROW_ARRAY_H
#define MR_BASE_GROW_ARRAY_H

#include <stddef.h>

/* Returns arr with room for at least need elements of elem bytes each: the
 * same pointer when it fits, else a larger copy (and *cap grows). Returns
 * NULL when memory runs out, leaving arr and *cap untouched. */
void *mr_grow_array(void *arr, size_t *cap, size_t need, size_t elem);

/* Returns a zeroed array of n elements (n may be 0), or NULL when out of memory. */
void *mr_zeroed_array(size_t n, size_t elem);

#endif
