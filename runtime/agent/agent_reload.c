/* agent_reload.c - `moonrover reload`: finds the running agent through its
 * pid file and sends it SIGHUP, only when the process the file names holds
 * the file's lock (files/pid_file.h): a stale file, a reused pid or another
 * moonrover command is never signalled. The signal goes through a pidfd
 * opened before the last check, so it cannot reach a process that took the
 * pid meanwhile. Then it waits for the agent's answer in its status file
 * (agent_status.h): a (re)load that began after the command asked, so one
 * that read the scripts as the user left them. A reload already running
 * when the signal is sent (another `moonrover reload`, a `kill -HUP`) read
 * them earlier: its answer is not taken, the one to this signal is. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "agent/agent_status.h"
#include "api.h"
#include "base/log.h"
#include "files/pid_file.h"

#define POLL_MS 20
/* How often, in polls, the wait checks that the agent still runs. */
#define ALIVE_EVERY 10

static int send_hup(const char *pid_file, int32_t pid, char *err, size_t errlen)
{
	int pidfd = pidfd_open(pid, 0), rc = 0;
	int32_t again;

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
	return rc;
}

static void pause_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Waits up to wait_ms for pid's answer to a reload asked at asked_ns. */
static int wait_answer(const char *pid_file, int32_t pid, uint64_t asked_ns, uint32_t wait_ms,
		       struct mr_agent_reload_answer *answer, char *err, size_t errlen)
{
	uint64_t end = mr_sys_monotonic_ns() + (uint64_t)wait_ms * 1000000ull;
	struct mr_agent_status st;

	for (unsigned polls = 1;; polls++) {
		if (mr_agent_status_read(pid_file, &st, NULL, 0) == 0 &&
		    mr_agent_status_answers(&st, pid, asked_ns)) {
			answer->outcome = st.result == MR_AGENT_RESULT_OK ? MR_RELOAD_DONE
									  : MR_RELOAD_REFUSED;
			snprintf(answer->detail, sizeof(answer->detail), "%s", st.detail);
			return 0;
		}
		if (mr_sys_monotonic_ns() >= end) {
			answer->outcome = MR_RELOAD_NO_ANSWER;
			return 0;
		}
		if (polls % ALIVE_EVERY == 0 && mr_pid_file_holder(pid_file, NULL, 0) != pid)
			return mr_error(err, errlen, -ESRCH, "the agent (pid %d) stopped before it answered",
					(int)pid);
		pause_ms(POLL_MS);
	}
}

int32_t mr_agent_reload(const char *pid_file, uint32_t wait_ms, struct mr_agent_reload_answer *answer,
			char *err, size_t errlen)
{
	uint64_t asked_ns = mr_sys_monotonic_ns();
	int32_t pid = mr_pid_file_holder(pid_file, err, errlen);
	int rc;

	memset(answer, 0, sizeof(*answer));
	if (pid < 0)
		return pid;
	rc = send_hup(pid_file, pid, err, errlen);
	if (rc == 0 && wait_ms > 0)
		rc = wait_answer(pid_file, pid, asked_ns, wait_ms, answer, err, errlen);
	return rc ? rc : pid;
}
