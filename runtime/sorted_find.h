/* sorted_find.h - binary search in arrays of structs sorted by a leading
 * uint64_t key (symbol tables: kallsyms, perf maps). */
#ifndef MR_SORTED_FIND_H
#define MR_SORTED_FIND_H

#include <stddef.h>
#include <stdint.h>

/* The index of the first of the elements with the greatest key <= key, or n
 * when every key is greater. Each element (stride bytes) starts with its key. */
size_t mr_floor_index(const void *base, size_t n, size_t stride, uint64_t key);

#endif
