/* noreturn_caller.c - a workload whose caller_a ends with a call that never
 * returns, so the return address it leaves on the stack is the first byte of
 * caller_b, which follows it (built with -falign-functions=1 and in source
 * order). Prints caller_b's address as "b=<hex>" and "ready=", then spins in
 * die_here, called by caller_a, for the given seconds (default 30). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long spins;

__attribute__((noreturn, noinline)) static void die_here(time_t until)
{
	for (;;) {
		spins++;
		if ((spins & 0xfffff) == 0 && time(NULL) >= until)
			exit(0);
	}
}

__attribute__((noinline)) void caller_a(time_t until)
{
	die_here(until);
}

__attribute__((noinline)) int caller_b(int x)
{
	return x * 5 + 3;
}

int main(int argc, char **argv)
{
	time_t seconds = argc > 1 ? atol(argv[1]) : 30;

	printf("b=%lx\n", (unsigned long)&caller_b);
	printf("ready=%d\n", caller_b(1));
	fflush(stdout);
	caller_a(time(NULL) + seconds);
}
