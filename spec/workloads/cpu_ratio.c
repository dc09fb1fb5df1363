/* cpu_ratio.c - a test workload that burns CPU in two functions in a known
 * 3:1 ratio of time (burn_alpha spins 3 units, burn_beta 1, in turn), until
 * the number of seconds given as argv[1] has passed (default 30).
 *
 * The split is by the thread's own CPU time, not by iterations (code
 * alignment would skew it) and not by the wall clock: cpu-clock sampling
 * sees the task only while it runs, and on a shared CPU a phase timed by the
 * wall clock loses the time the task waits, mostly to the long alpha phase
 * (a preemption lands in alpha 3 times in 4 and can take up to 3 units from
 * it, 1 from beta). That showed as alpha:beta near 2.2 on a busy machine. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

/* Called every 2000 spins (a few microseconds), so a phase overruns its end by
 * that little, the same for both; a few percent of the samples land here. */
__attribute__((noinline)) static double now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void burn_alpha(double seconds)
{
	double end = now(CLOCK_THREAD_CPUTIME_ID) + seconds;

	while (now(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 2000; i++)
			sink += (uint64_t)i;
}

__attribute__((noinline)) void burn_beta(double seconds)
{
	double end = now(CLOCK_THREAD_CPUTIME_ID) + seconds;

	while (now(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 2000; i++)
			sink += (uint64_t)i;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 30.0;
	double end = now(CLOCK_MONOTONIC) + seconds;
	uint64_t state = 0x9e3779b97f4a7c15ull;

	/* A random unit (0.5 to 1.5 ms) per round: a fixed cycle would beat
	 * against the sampling period and skew what the samples see. */
	while (now(CLOCK_MONOTONIC) < end) {
		double unit;

		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		unit = 0.0005 + (double)(state % 1000) / 1e6;
		burn_alpha(3 * unit);
		burn_beta(unit);
	}
	return 0;
}
