/* pid_names.h - process names by pid, remembered while processes live so that
 * samples of processes that exited still carry their name. */
#ifndef MR_PID_NAMES_H
#define MR_PID_NAMES_H

#include <stddef.h>
#include <stdint.h>

struct mr_pid_names;

struct mr_pid_names *mr_pid_names_new(void);
void mr_pid_names_free(struct mr_pid_names *t);
/* Sets the name of pid; returns 1 if pid was new, 0 if known, -ENOMEM. */
int mr_pid_names_set(struct mr_pid_names *t, uint32_t pid, const char *comm);
const char *mr_pid_names_get(const struct mr_pid_names *t, uint32_t pid);
size_t mr_pid_names_count(const struct mr_pid_names *t);

#endif
