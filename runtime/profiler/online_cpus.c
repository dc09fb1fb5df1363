/* online_cpus.c - reads /sys/devices/system/cpu/online: sampling must attach
 * to the CPUs that exist, not to 0..N-1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/online_cpus.h"

static int add_range(long lo, long hi, int *cpus, int n, int max)
{
	if (lo < 0 || hi < lo)
		return -EINVAL;
	for (long c = lo; c <= hi; c++) {
		if (n >= max)
			return -E2BIG;
		cpus[n++] = (int)c;
	}
	return n;
}

int mr_profiler_parse_cpus(const char *text, int *cpus, int max)
{
	const char *s = text;
	int n = 0;

	while (*s && *s != '\n') {
		char *end;
		long lo = strtol(s, &end, 10), hi = lo;

		if (end == s)
			return -EINVAL;
		s = end;
		if (*s == '-') {
			hi = strtol(s + 1, &end, 10);
			if (end == s + 1)
				return -EINVAL;
			s = end;
		}
		n = add_range(lo, hi, cpus, n, max);
		if (n < 0)
			return n;
		if (*s == ',')
			s++;
	}
	return n;
}

int mr_profiler_online_cpus(int *cpus, int max)
{
	char buf[1024];
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int err;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		err = ferror(f) ? -EIO : -ENODATA;
		fclose(f);
		return err;
	}
	fclose(f);
	return mr_profiler_parse_cpus(buf, cpus, max);
}
