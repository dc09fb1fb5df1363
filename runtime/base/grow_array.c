/* grow_array.c - allocates heap arrays and doubles them on demand (see grow_array.h). */
#include <stdint.h>
#include <stdlib.h>

#include "base/grow_array.h"

enum { GROW_MIN = 16 };

void *mr_grow_array(void *arr, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : GROW_MIN;
	void *grown;

	if (arr && need <= *cap)
		return arr;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return NULL;
		n *= 2;
	}
	if (elem == 0 || n > SIZE_MAX / elem)
		return NULL;
	grown = realloc(arr, n * elem);
	if (!grown)
		return NULL;
	*cap = n;
	return grown;
}

void *mr_zeroed_array(size_t n, size_t elem)
{
	return calloc(n ? n : 1, elem);
}
