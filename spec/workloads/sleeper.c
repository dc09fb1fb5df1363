/* sleeper.c - a test workload that spends its time blocked in one known
 * function, nap_in_known_function, for argv[1] seconds (default 30). The
 * sleep is a raw system call made from our own frame-pointer code, so the
 * user stack is complete even though libc has no frame pointers. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>

/* Makes the system call itself: the function keeps a frame (it has locals)
 * and is the leaf of the user stack while the thread is blocked. */
__attribute__((noinline)) long nap_in_known_function(void)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 20 * 1000 * 1000 };
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0L)
			 : "rcx", "r11", "memory");
	return ret;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 30.0;
	long naps = (long)(seconds * 50);

	for (long i = 0; i < naps; i++)
		nap_in_known_function();
	return 0;
}
