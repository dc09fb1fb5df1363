/* proc_root.c - the proc root ($ROVER_HOST_PROC_MAPPING or /proc) and the
 * paths of per-process files below it. */
#include "proc/proc_root.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

const char *mr_proc_root(void)
{
	const char *mapped = getenv("ROVER_HOST_PROC_MAPPING");

	return mapped && *mapped ? mapped : "/proc";
}

int mr_proc_path(char *buf, size_t len, int32_t pid, const char *name)
{
	int n;

	if (pid <= 0 || !name)
		return -EINVAL;
	n = snprintf(buf, len, "%s/%d/%s", mr_proc_root(), (int)pid, name);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}
