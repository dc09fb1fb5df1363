/* churn.c - a workload of short-lived processes: starts RATE new processes a
 * second for SECONDS seconds (usage: churn RATE SECONDS [SPIN_MS]). Each one
 * is a fresh exec of this program that burns SPIN_MS (default 2) of its own
 * CPU time in churn_child_work and exits, so a whole-system profiler sees a
 * steady stream of new processes, each with new mappings to read. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void churn_child_work(double seconds)
{
	double end = cpu_seconds() + seconds;

	while (cpu_seconds() < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i;
}

/* self is this program's path: exec'd by name, a child is named "churn". */
static void spawn(const char *self, const char *spin_ms)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl(self, "churn", "--child", spin_ms, (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		perror("churn: fork");
}

static void add_ns(struct timespec *t, long ns)
{
	t->tv_nsec += ns;
	while (t->tv_nsec >= 1000000000L) {
		t->tv_nsec -= 1000000000L;
		t->tv_sec++;
	}
}

int main(int argc, char **argv)
{
	struct timespec next;
	char self[4096];
	ssize_t len;
	long rate, seconds, period_ns;
	const char *spin_ms = argc > 3 ? argv[3] : "2";

	if (argc == 3 && strcmp(argv[1], "--child") == 0) {
		churn_child_work(atof(argv[2]) / 1000.0);
		return 0;
	}
	if (argc < 3 || (rate = atol(argv[1])) <= 0 || (seconds = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: churn RATE SECONDS [SPIN_MS]\n");
		return 2;
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0) {
		perror("churn: /proc/self/exe");
		return 1;
	}
	self[len] = '\0';
	signal(SIGCHLD, SIG_IGN); /* children are reaped by the kernel */
	period_ns = 1000000000L / rate;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (long i = 0; i < rate * seconds; i++) {
		spawn(self, spin_ms);
		add_ns(&next, period_ns);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return 0;
}
