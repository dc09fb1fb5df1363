/* tracefs.h - makes sure tracefs is mounted: classic tracepoints are found
 * through it, and minimal hosts often boot without it. */
#ifndef MR_KERNEL_TRACEFS_H
#define MR_KERNEL_TRACEFS_H

#include <stddef.h>

/* Returns 0 when tracefs events are reachable (mounting tracefs at
 * /sys/kernel/tracing if needed, which needs root), or a negative errno with
 * the reason in detail. *mounted is set to 1 when this call mounted it. */
int mr_kernel_tracefs_ensure(int *mounted, char *detail, size_t len);

#endif
