/* agent_reload.c - `moonrover reload`: finds the running agent through its
 * pid file and sends it SIGHUP, only when the process the file names holds
 * the file's lock (files/pid_file.h): a stale file, a reused pid or another
 * moonrover command is never signalled. The signal goes through a pidfd
 * opened before the last check, so it cannot reach a process that took the
 * pid meanwhile. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "api.h"
#include "base/log.h"
#include "files/pid_file.h"

int32_t mr_agent_reload(const char *pid_file, char *err, size_t errlen)
{
	int32_t pid = mr_pid_file_holder(pid_file, err, errlen), again;
	int pidfd, rc = 0;

	if (pid < 0)
		return pid;
	pidfd = pidfd_open(pid, 0);
	if (pidfd < 0)
		return mr_error(err, errlen, -errno, "cannot signal the agent (pid %d): %s", (int)pid,
				strerror(errno));
	again = mr_pid_file_holder(pid_file, err, errlen);
	if (again < 0)
		rc = again;
	else if (again != pid)
		rc = mr_error(err, errlen, -EAGAIN,
			      "the agent holding %s changed while being signalled; try again", pid_file);
	else if (pidfd_send_signal(pidfd, SIGHUP, NULL, 0) != 0)
		rc = mr_error(err, errlen, -errno, "cannot signal the agent (pid %d): %s", (int)pid,
			      strerror(errno));
	close(pidfd);
	return rc ? rc : pid;
}
