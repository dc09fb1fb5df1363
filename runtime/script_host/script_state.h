/* script_state.h - a fresh Lua state for one script: the standard library
 * minus what could block or deadlock under the watchdog (io, most of os),
 * print sent to the log, and the script's link to the agent. */
#ifndef MR_SCRIPT_HOST_SCRIPT_STATE_H
#define MR_SCRIPT_HOST_SCRIPT_STATE_H

#include <stddef.h>

#include <lua.h>

struct mr_script;

/* A message handler for lua_pcall: the message with a traceback. */
int mr_script_traceback(lua_State *L);

/* Compiles the script's file (its user's files checked, see script_trust.h)
 * onto its stack. lua_load's result; the message is on the stack. */
int mr_script_state_load(struct mr_script *s, const char *path);
/* Returns the state, or NULL when out of memory. */
lua_State *mr_script_state_new(struct mr_script *s, const char *package_path, const char *imported,
			       size_t imported_len);

#endif
