/* signals.c - SIGINT and SIGTERM for the commands that run in Lua's loop
 * (`moonrover profile`): caught, remembered, and read back by Lua. The agent
 * has its own handling on its event loop. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "api.h"

/* Global because the signal handler sets it; read by Lua. */
static volatile sig_atomic_t pending_signal;

static void on_signal(int sig)
{
	pending_signal = sig;
}

/* No SA_RESTART: a blocking poll returns EINTR so the caller sees the signal. */
int mr_sys_signals_catch(char *err, size_t errlen)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) {
		int e = errno;

		snprintf(err, errlen, "cannot catch SIGINT and SIGTERM: %s", strerror(e));
		return -e;
	}
	return 0;
}

int mr_sys_signal_pending(void)
{
	return pending_signal;
}
