/* agent_status.h - the agent's answer to `moonrover reload`: the status
 * file beside its pid file, written after the first start and after each
 * reload, and read by the command that asked. */
#ifndef MR_AGENT_AGENT_STATUS_H
#define MR_AGENT_AGENT_STATUS_H

#include <stddef.h>
#include <stdint.h>

struct mr_script_set;

/* What a status file says. */
struct mr_agent_status {
	int32_t pid;       /* the agent that wrote it */
	int64_t reload;    /* reloads it tried before writing it (0: its first start) */
	int ok;            /* that (re)load went through */
	char detail[1024]; /* what it did, or why it refused */
};

/* Writes how the scripts' last (re)load went into the status file (the pid
 * file's path with ".status" added). 0, or a negative errno with
 * the reason in err. */
int mr_agent_status_write(const char *pid_file, const struct mr_script_set *h, char *err, size_t errlen);
/* Reads the status file of pid_file: 0, or a negative errno with the reason
 * in err (-ENOENT: there is none yet). */
int mr_agent_status_read(const char *pid_file, struct mr_agent_status *out, char *err, size_t errlen);

#endif
