/* duty_cycle.c - a test workload that keeps THREADS threads (argv[3],
 * default 1) busy for PERCENT (argv[1], default 100) of every 100 ms of wall
 * time, in busy_phase, and asleep the rest, for SECONDS (argv[2], default
 * 30). The busy phase is timed by the wall clock, so a CPU shared with other
 * work lowers the process's CPU share below PERCENT per thread, never raises
 * it: policies that watch CPU shares are tested with it. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define PERIOD_NS 100000000LL

static volatile uint64_t sink;
static long long busy_ns;
static long long end_ns;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void busy_phase(long long until)
{
	while (now_ns() < until)
		for (int i = 0; i < 2000; i++)
			sink += (uint64_t)i;
}

static void *run(void *arg)
{
	(void)arg;
	for (long long start = now_ns(); start < end_ns; start += PERIOD_NS) {
		struct timespec wake = { .tv_sec = (start + PERIOD_NS) / 1000000000LL,
					 .tv_nsec = (start + PERIOD_NS) % 1000000000LL };

		busy_phase(start + busy_ns);
		if (busy_ns < PERIOD_NS)
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double percent = argc > 1 ? atof(argv[1]) : 100.0;
	double seconds = argc > 2 ? atof(argv[2]) : 30.0;
	int threads = argc > 3 ? atoi(argv[3]) : 1;
	pthread_t extra[63];
	int started = 0;

	if (percent < 0 || percent > 100 || threads < 1 || threads > 64)
		return 2;
	busy_ns = (long long)(percent / 100.0 * PERIOD_NS);
	end_ns = now_ns() + (long long)(seconds * 1e9);
	while (started < threads - 1 && pthread_create(&extra[started], NULL, run, NULL) == 0)
		started++;
	run(NULL);
	for (int i = 0; i < started; i++)
		pthread_join(extra[i], NULL);
	return 0;
}
