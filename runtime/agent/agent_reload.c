/* agent_reload.c - `moonrover reload`: finds the running agent through its
 * pid file and sends it SIGHUP. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "proc/proc_files.h"

static int32_t read_pid(const char *pid_file, char *err, size_t errlen)
{
	FILE *f = fopen(pid_file, "re");
	int pid = 0, ok;

	if (!f) {
		snprintf(err, errlen, "cannot read %s: %s (is the agent running?)", pid_file,
			 strerror(errno));
		return -ENOENT;
	}
	ok = fscanf(f, "%d", &pid) == 1 && pid > 0;
	fclose(f);
	if (!ok) {
		snprintf(err, errlen, "%s does not hold a process id", pid_file);
		return -EINVAL;
	}
	return pid;
}

int32_t mr_agent_reload(const char *pid_file, char *err, size_t errlen)
{
	char comm[32];
	int32_t pid = read_pid(pid_file, err, errlen);

	if (pid < 0)
		return pid;
	if (mr_proc_comm(pid, comm, sizeof(comm)) <= 0 || strcmp(comm, "moonrover") != 0) {
		snprintf(err, errlen, "process %d (from %s) is not a running moonrover agent", pid, pid_file);
		return -ESRCH;
	}
	if (kill(pid, SIGHUP) != 0) {
		snprintf(err, errlen, "cannot signal the agent (pid %d): %s", pid, strerror(errno));
		return -errno;
	}
	return pid;
}
