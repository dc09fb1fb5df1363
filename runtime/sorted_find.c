/* sorted_find.c - floor search over structs keyed by a leading uint64_t. */
#include <string.h>

#include "sorted_find.h"

static uint64_t key_at(const void *base, size_t stride, size_t i)
{
	uint64_t k;

	memcpy(&k, (const char *)base + i * stride, sizeof(k));
	return k;
}

size_t mr_floor_index(const void *base, size_t n, size_t stride, uint64_t key)
{
	size_t lo = 0, hi = n;
	uint64_t found;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_at(base, stride, mid) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return n;
	found = key_at(base, stride, --lo);
	while (lo > 0 && key_at(base, stride, lo - 1) == found)
		lo--;
	return lo;
}
