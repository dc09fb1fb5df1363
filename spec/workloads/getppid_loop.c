/* getppid_loop.c - the event-path benchmark's generator: calls getppid()
 * through syscall(2) (no libc caching) in a tight loop for argv[1] seconds
 * (default 5), or until argv[2] calls were made when that is given and
 * comes first. Every call is one event for bench.bpf.c. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CALLS_PER_CLOCK_CHECK 4096

static double now_seconds(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5.0;
	long long max_calls = argc > 2 ? atoll(argv[2]) : -1;
	double end = now_seconds() + seconds;

	for (long long calls = 0; max_calls < 0 || calls < max_calls; calls++) {
		if (calls % CALLS_PER_CLOCK_CHECK == 0 && now_seconds() >= end)
			break;
		syscall(SYS_getppid);
	}
	return 0;
}
