/* proc_root.h - where process facts are read from: the directory named by
 * $ROVER_HOST_PROC_MAPPING (the host's /proc mounted into a container), else
 * /proc, and the paths of per-process files below it. */
#ifndef MR_PROC_PROC_ROOT_H
#define MR_PROC_PROC_ROOT_H

#include <stddef.h>
#include <stdint.h>

/* The proc root, looked up again on each call. */
const char *mr_proc_root(void);
/* Writes "<root>/<pid>/<name>" into buf. The caller vets name. 0, -EINVAL
 * for pid <= 0, or -ENAMETOOLONG when it does not fit. */
int mr_proc_path(char *buf, size_t len, int32_t pid, const char *name);

#endif
