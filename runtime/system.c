/* system.c - small facts about this process and the machine for Lua: version,
 * clocks, process existence and names, own resource usage, and signals. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <protobuf-c/protobuf-c.h>

#include "api.h"

/* The one piece of global state: set by the signal handler, read by Lua. */
static volatile sig_atomic_t pending_signal;

const char *mr_version(void)
{
	return MR_VERSION;
}

const char *mr_build_info(void)
{
	static char info[128];

	if (!info[0])
		snprintf(info, sizeof(info), "libbpf %u.%u, protobuf-c %s", libbpf_major_version(),
			 libbpf_minor_version(), protobuf_c_version());
	return info;
}

uint64_t mr_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int32_t mr_self_pid(void)
{
	return (int32_t)getpid();
}

int mr_process_exists(int pid)
{
	char path[64];

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	return access(path, F_OK) == 0;
}

int mr_process_comm(int pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;
	size_t n;

	if (pid <= 0 || len == 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	if (n == 0)
		return -ENODATA;
	buf[n] = '\0';
	if (buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

int mr_self_usage(uint64_t *cpu_ns, uint64_t *max_rss_kb)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return -errno;
	*cpu_ns = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
		  ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
	*max_rss_kb = (uint64_t)ru.ru_maxrss;
	return 0;
}

int mr_sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	if (ms < 0)
		return -EINVAL;
	return nanosleep(&ts, NULL) == 0 ? 0 : -errno;
}

static void on_signal(int sig)
{
	pending_signal = sig;
}

/* No SA_RESTART: a blocking poll returns EINTR so the caller sees the signal. */
int mr_signals_catch(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
		return -errno;
	return 0;
}

int mr_signal_pending(void)
{
	return pending_signal;
}

int mr_random_uuid(char *buf, size_t len)
{
	unsigned char b[16];

	if (len < 37)
		return -EINVAL;
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -EIO;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
		 b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	return 0;
}

double mr_epoch_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)(ts.tv_nsec / 1000000);
}
