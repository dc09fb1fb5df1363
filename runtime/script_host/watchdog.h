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
/* Lets the call in progress run until budget_ms after its start, if that is
 * later than its deadline now; no effect outside a call. */
void mr_script_watchdog_extend(unsigned budget_ms);
/* Brackets for runtime code called from Lua. enter may not return: it jumps
 * out when the budget ran out while the runtime had control. */
void mr_script_watchdog_leave(void);
void mr_script_watchdog_enter(void);
/* The same for code that may run either inside Lua or inside the runtime
 * (a Lua state's allocator): hold returns what resume needs to restore, and
 * resume jumps only if Lua code had control when hold was called. */
int mr_script_watchdog_hold(void);
void mr_script_watchdog_resume(int held);
/* Ends the call in progress as if its budget ran out: at once when Lua code
 * had control when hold returned held, else when the runtime code running
 * returns to Lua (mr_script_watchdog_enter). Returns 0 when no call is in
 * progress, 1 when the jump is to come. */
int mr_script_watchdog_abort(int held);

#endif
