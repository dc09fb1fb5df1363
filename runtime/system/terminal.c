/* terminal.c - whether the agent's standard error is a terminal: what
 * decides if the commands show a live status line there. */
#include <unistd.h>

#include "api.h"

int mr_sys_stderr_is_tty(void)
{
	return isatty(STDERR_FILENO) == 1;
}
