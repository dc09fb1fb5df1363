/* frameless.c - a test workload built as most software is: -O2 without frame
 * pointers (spec/CMakeLists.txt). flock_loop calls kestrel_spin, a leaf that
 * burns CPU, and heron_wait, which sleeps in Debian's libc (clock_nanosleep),
 * in turns; argv[1] says which ("cpu", "sleep" or "both") and argv[2] for how
 * many seconds (default 30). A frame-pointer walk loses flock_loop under
 * kestrel_spin and heron_wait under clock_nanosleep; an unwind by CFI keeps
 * main;flock_loop;kestrel_spin and main;flock_loop;heron_wait;clock_nanosleep.
 * "signal" instead spins in osprey_signal, a SIGALRM handler called every
 * 10 ms while flock_loop polls the clock: its stacks go through the signal
 * frame (glibc's __restore_rt) back to main;flock_loop. "deep" spins in
 * kestrel_spin under 200 nested calls of plover_dive, frameless too: deeper
 * than a walk goes (127 frames). "clock" reads the clock in a loop in
 * grebe_poll: its samples land in the vDSO's clock_gettime. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void kestrel_spin(long n)
{
	for (long i = 0; i < n; i++)
		sink += (unsigned long)i;
}

__attribute__((noinline)) int heron_wait(long ns)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ns };

	return clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void flock_loop(int spin, int wait, double seconds)
{
	double end = now() + seconds;

	while (now() < end) {
		if (spin)
			kestrel_spin(2000000);
		if (wait)
			heron_wait(2 * 1000 * 1000);
	}
}

__attribute__((noinline)) static void osprey_signal(int sig)
{
	(void)sig;
	kestrel_spin(5000000);
	sink++; /* after the call: no tail call, the handler keeps its frame */
}

static int start_signals(void)
{
	struct sigaction sa = { .sa_handler = osprey_signal };
	struct itimerval every = { .it_interval = { 0, 10000 }, .it_value = { 0, 10000 } };

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGALRM, &sa, NULL) != 0)
		return -1;
	return setitimer(ITIMER_REAL, &every, NULL);
}

__attribute__((noinline)) double grebe_poll(double seconds)
{
	double end = now() + seconds, t;

	while ((t = now()) < end)
		sink++;
	return t;
}

/* depth calls of itself, then the spin; the store after each call keeps the
 * calls from being turned into a loop or a tail call. */
__attribute__((noinline)) int plover_dive(int depth, double seconds)
{
	int r;

	if (depth == 0) {
		flock_loop(1, 0, seconds);
		return 0;
	}
	r = plover_dive(depth - 1, seconds);
	sink += (unsigned long)r;
	return r + 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "both";
	double seconds = argc > 2 ? atof(argv[2]) : 30.0;

	if (strcmp(mode, "signal") == 0) {
		if (start_signals() != 0)
			return 1;
		flock_loop(0, 0, seconds);
		return 0;
	}

	if (strcmp(mode, "clock") == 0) {
		grebe_poll(seconds);
		return 0;
	}
	if (strcmp(mode, "deep") == 0) {
		plover_dive(200, seconds);
		return 0;
	}
	flock_loop(strcmp(mode, "sleep") != 0, strcmp(mode, "cpu") != 0, seconds);
	return 0;
}
