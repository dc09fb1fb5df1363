/* named_threads.c - a test workload of three threads named (by
 * pthread_setname_np) mr_alpha, mr_beta and mr_gamma, each burning CPU in
 * spin_in_thread for argv[1] seconds of the wall clock (default 30), then
 * exiting; main only waits for them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NTHREADS 3

static volatile uint64_t sink;
static double end_time;

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin_in_thread(void)
{
	while (wall_now() < end_time)
		for (int i = 0; i < 2000; i++)
			sink += (uint64_t)i;
}

static void *thread_main(void *name)
{
	if (pthread_setname_np(pthread_self(), name) != 0)
		fprintf(stderr, "named_threads: cannot name a thread %s\n", (const char *)name);
	spin_in_thread();
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const names[NTHREADS] = { "mr_alpha", "mr_beta", "mr_gamma" };
	pthread_t threads[NTHREADS];
	int started = 0;

	end_time = wall_now() + (argc > 1 ? atof(argv[1]) : 30.0);
	for (; started < NTHREADS; started++)
		if (pthread_create(&threads[started], NULL, thread_main, (void *)names[started]) != 0)
			break;
	for (int i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	return started == NTHREADS ? 0 : 1;
}
