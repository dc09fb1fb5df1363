/* sleeper.c - a test workload that spends its time blocked in one known
 * function, nap_in_known_function, for argv[1] seconds (default 30). The
 * sleep is a raw system call made from our own frame-pointer code, so the
 * user stack is complete even though libc has no frame pointers. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>

__attribute__((noinline)) static long raw_nanosleep(const struct timespec *ts)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_nanosleep), "D"(ts), "S"(0L)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) void nap_in_known_function(void)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 20 * 1000 * 1000 };

	raw_nanosleep(&ts);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 30.0;
	long naps = (long)(seconds * 50);

	for (long i = 0; i < naps; i++)
		nap_in_known_function();
	return 0;
}
