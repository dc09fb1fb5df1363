/* tracefs.c - finds or mounts tracefs (libbpf looks tracepoint ids up in
 * /sys/kernel/tracing/events, then /sys/kernel/debug/tracing/events). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/tracefs.h"

#define TRACEFS "/sys/kernel/tracing"

static const char *const EVENTS[] = { TRACEFS "/events", "/sys/kernel/debug/tracing/events" };

static int events_reachable(void)
{
	return access(EVENTS[0], R_OK) == 0 || access(EVENTS[1], R_OK) == 0;
}

/* When they are not reachable: whether the events are there but this user
 * may not read them (tracefs is root's, mode 700), rather than not mounted. */
static int events_denied(void)
{
	struct stat st;

	for (size_t i = 0; i < sizeof(EVENTS) / sizeof(EVENTS[0]); i++)
		if (stat(EVENTS[i], &st) == 0 || errno == EACCES)
			return 1;
	return 0;
}

int mr_kernel_tracefs_ensure(int *mounted, char *detail, size_t len)
{
	*mounted = 0;
	if (events_reachable())
		return 0;
	if (events_denied()) {
		snprintf(detail, len, "tracefs is mounted, but this user cannot read its events");
		return -EACCES;
	}
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
