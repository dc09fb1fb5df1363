/* cpu_ratio.c - a test workload that burns CPU in two functions in a known
 * 3:1 ratio (burn_alpha does three times the work of burn_beta), until the
 * number of seconds given as argv[1] has passed (default 30). */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) void burn_alpha(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) void burn_beta(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 30.0;
	double end = now() + seconds;
	const unsigned long unit = 200000;

	while (now() < end) {
		burn_alpha(3 * unit);
		burn_beta(unit);
	}
	return 0;
}
