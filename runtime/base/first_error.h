/* first_error.h - the first failure among results taken one after another
 * (metric series ids, say: each call made even when an earlier one failed,
 * the first negative errno reported). */
#ifndef MR_BASE_FIRST_ERROR_H
#define MR_BASE_FIRST_ERROR_H

#include <stddef.h>
#include <stdint.h>

/* The first negative of the n results rcs, or 0 when none is. */
static inline int32_t mr_first_error(const int32_t *rcs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (rcs[i] < 0)
			return rcs[i];
	return 0;
}

/* mr_first_error over its arguments: MR_FIRST_ERROR(a, b, c). */
#define MR_FIRST_ERROR(...)                              \
	mr_first_error((const int32_t[]){ __VA_ARGS__ }, \
		       sizeof((const int32_t[]){ __VA_ARGS__ }) / sizeof(int32_t))

#endif
