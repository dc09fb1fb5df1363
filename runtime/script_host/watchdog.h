/* watchdog.h - time budgets for Lua callbacks. A callback that runs past its
 * budget is abandoned mid-flight (siglongjmp out of the Lua VM); its state
 * must then never be used again. Runtime functions that Lua calls bracket
 * their work with mr_script_watchdog_leave/enter so that the jump never leaves C
 * code that may hold a lock or be inside malloc. Main thread only. */
#ifndef MR_SCRIPT_HOST_WATCHDOG_H
#define MR_SCRIPT_HOST_WATCHDOG_H

#include <lua.h>

/* Installs the SIGALRM handler and a timer aimed at the calling thread. */
int mr_script_watchdog_init(void);
void mr_script_watchdog_shutdown(void);
/* lua_pcall under a budget. Returns lua_pcall's result, or -1 when the
 * budget ran out (then L is abandoned: do not touch it again). */
int mr_script_watchdog_pcall(lua_State *L, int nargs, int nresults, int errfunc, unsigned budget_ms);
/* Brackets for runtime code called from Lua. enter may not return: it jumps
 * out when the budget ran out while the runtime had control. */
void mr_script_watchdog_leave(void);
void mr_script_watchdog_enter(void);

#endif
