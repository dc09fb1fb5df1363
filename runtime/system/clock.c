/* clock.c - the clocks Lua and the runtime read (monotonic for durations,
 * the wall clock for reports) and a plain sleep. */
#include <errno.h>
#include <time.h>

#include "api.h"
#include "api_test.h"

uint64_t mr_sys_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double mr_sys_epoch_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)(ts.tv_nsec / 1000000);
}

int mr_sys_sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	if (ms < 0)
		return -EINVAL;
	return nanosleep(&ts, NULL) == 0 ? 0 : -errno;
}
