/* tracefs.c - finds or mounts tracefs (libbpf looks tracepoint ids up in
 * /sys/kernel/tracing/events, then /sys/kernel/debug/tracing/events). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "kernel/tracefs.h"

#define TRACEFS "/sys/kernel/tracing"

static int events_reachable(void)
{
	return access(TRACEFS "/events", R_OK) == 0 || access("/sys/kernel/debug/tracing/events", R_OK) == 0;
}

int mr_kernel_tracefs_ensure(int *mounted, char *detail, size_t len)
{
	*mounted = 0;
	if (events_reachable())
		return 0;
	if (mount("nodev", TRACEFS, "tracefs", 0, NULL) != 0) {
		int err = errno;

		snprintf(detail, len, "tracefs is not mounted and mounting it at " TRACEFS " failed: %s",
			 strerror(err));
		return -err;
	}
	*mounted = 1;
	if (events_reachable())
		return 0;
	snprintf(detail, len, "tracefs mounted at " TRACEFS " but it has no events directory");
	return -ENOENT;
}
