/* script_traceback.h - the message handler of a script's calls: the error
 * message and a traceback that point at the script's own code, not at the
 * agent API's modules (moonrover/agent.lua, moonrover/rt.lua) it went through. */
#ifndef MR_SCRIPT_HOST_SCRIPT_TRACEBACK_H
#define MR_SCRIPT_HOST_SCRIPT_TRACEBACK_H

#include <lua.h>

/* A lua_pcall message handler: takes the message, returns it with the
 * traceback. A position in an API module that starts the message becomes
 * the position of the script's line that called the API. */
int mr_script_traceback_user(lua_State *L);

#endif
