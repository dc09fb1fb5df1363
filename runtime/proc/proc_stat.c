/* proc_stat.c - what watching processes reads: /proc/PID/stat of many pids in
 * one call (CPU time, threads, resident memory, start time, name), and the
 * machine's load averages and CPU count. No string handling is left to Lua;
 * the sampler's repeated reads go through proc_watch.c's kept files. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "files/file_read.h"
#include "base/log.h"
#include "proc/proc_root.h"
#include "proc/proc_stat.h"

#define STAT_MAX 1024
#define LOADAVG_MAX 256

/* The number at p (a field), or -EINVAL when there is none. */
static int parse_u64(const char *p, uint64_t *v)
{
	char *end;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(p, &end, 10);
	if (errno != 0 || (*end != ' ' && *end != '\n' && *end != '\0'))
		return -EINVAL;
	return 0;
}

/* Stores the field numbered field (from 3 on) of the ones wanted. */
static int store_field(int field, const char *p, struct mr_proc_stat_fields *f)
{
	uint64_t v;

	switch (field) {
	case 14:
		return parse_u64(p, &f->utime);
	case 15:
		return parse_u64(p, &f->stime);
	case 20:
		if (parse_u64(p, &v) != 0 || v > INT64_MAX)
			return -EINVAL;
		f->threads = (int64_t)v;
		return 0;
	case 22:
		return parse_u64(p, &f->start_ticks);
	case 24:
		return parse_u64(p, &f->rss_pages);
	default:
		return 0;
	}
}

static void copy_comm(const char *open, const char *close, struct mr_proc_stat_fields *f)
{
	size_t n = (size_t)(close - open - 1);

	if (n >= sizeof(f->comm))
		n = sizeof(f->comm) - 1;
	memcpy(f->comm, open + 1, n);
	f->comm[n] = '\0';
}

int mr_proc_stat_parse(const char *text, struct mr_proc_stat_fields *f)
{
	const char *open = strchr(text, '('), *p = strrchr(text, ')');
	int rc;

	if (!open || !p || p < open)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	copy_comm(open, p, f);
	p++;
	for (int field = 3; field <= 24; field++) {
		p += strspn(p, " ");
		if (!*p)
			return -EINVAL;
		rc = store_field(field, p, f);
		if (rc < 0)
			return rc;
		p += strcspn(p, " ");
	}
	return 0;
}

/* Reads and parses the stat file of pid. 0, or a negative errno. */
static int read_stat(int32_t pid, struct mr_proc_stat_fields *f)
{
	char path[PATH_MAX], text[STAT_MAX];
	ssize_t n;
	int rc = mr_proc_path(path, sizeof(path), pid, "stat");

	if (rc < 0)
		return rc;
	n = mr_file_read_into(path, text, sizeof(text));
	if (n < 0)
		return (int)n;
	return mr_proc_stat_parse(text, f);
}

void mr_proc_stat_fill(struct mr_proc_stat *out, int32_t pid, const struct mr_proc_stat_fields *f, double hz,
		       uint64_t page)
{
	out->pid = pid;
	out->threads = f->threads > INT32_MAX ? INT32_MAX : (int32_t)f->threads;
	out->cpu_seconds = (double)(f->utime + f->stime) / hz;
	out->start_ticks = f->start_ticks;
	out->start_seconds = (double)f->start_ticks / hz;
	out->rss_bytes = f->rss_pages * page;
	memcpy(out->comm, f->comm, sizeof(out->comm));
}

int32_t mr_proc_stat_read(const int32_t *pids, uint32_t n, struct mr_proc_stat *out)
{
	struct mr_proc_stat_fields f;
	long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	int32_t read = 0;

	if (!pids || !out || hz <= 0 || page <= 0)
		return -EINVAL;
	if (n > INT32_MAX)
		n = INT32_MAX;
	for (uint32_t i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		if (read_stat(pids[i], &f) != 0)
			continue;
		mr_proc_stat_fill(&out[i], pids[i], &f, (double)hz, (uint64_t)page);
		read++;
	}
	return read;
}

static int32_t system_failed(int rc, const char *what, char *err, size_t errlen)
{
	return mr_error(err, errlen, rc, "cannot read %s/%s: %s", mr_proc_root(), what, strerror(-rc));
}

int32_t mr_proc_system_read(struct mr_proc_system *out, char *err, size_t errlen)
{
	char path[PATH_MAX], text[LOADAVG_MAX];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	ssize_t n;
	int rc;

	if (!out)
		return system_failed(-EINVAL, "loadavg", err, errlen);
	rc = snprintf(path, sizeof(path), "%s/loadavg", mr_proc_root());
	if (rc < 0 || (size_t)rc >= sizeof(path))
		return system_failed(-ENAMETOOLONG, "loadavg", err, errlen);
	n = mr_file_read_into(path, text, sizeof(text));
	if (n < 0)
		return system_failed((int)n, "loadavg", err, errlen);
	if (sscanf(text, "%lf %lf %lf", &out->load1, &out->load5, &out->load15) != 3)
		return system_failed(-EINVAL, "loadavg", err, errlen);
	out->cpus = cpus > 0 && cpus <= INT32_MAX ? (int32_t)cpus : 1;
	return 0;
}

static double seconds(clockid_t clock)
{
	struct timespec ts;

	if (clock_gettime(clock, &ts) != 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The "btime" line of the proc root's stat file, as ps reads it. */
static int btime_line(void *ctx, const char *line)
{
	unsigned long long v;

	if (sscanf(line, "btime %llu", &v) != 1)
		return 0;
	*(double *)ctx = (double)v;
	return -ECANCELED;
}

double mr_proc_boot_epoch(void)
{
	char path[PATH_MAX];
	double boot = 0;
	FILE *f;
	int rc = snprintf(path, sizeof(path), "%s/stat", mr_proc_root());

	if (rc > 0 && (size_t)rc < sizeof(path) && (f = fopen(path, "re")) != NULL) {
		rc = mr_file_read_lines(f, btime_line, &boot);
		if (fclose(f) != 0 || rc != -ECANCELED)
			boot = 0;
	}
	return boot > 0 ? boot : seconds(CLOCK_REALTIME) - seconds(CLOCK_BOOTTIME);
}
