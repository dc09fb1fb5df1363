/* script_state.c - builds a script's Lua state. package.loaded["moonrover.host"]
 * carries what lua/moonrover/agent.lua needs: the script handle (an address,
 * cast once to mr_script * through the FFI), its name, whether this is the
 * canary run, and the state its previous version exported. */
#include <stdint.h>

#include <lauxlib.h>
#include <lualib.h>

#include "host.h"
#include "log.h"
#include "script.h"
#include "script_state.h"

static int print_to_log(lua_State *L)
{
	const char *name = lua_tostring(L, lua_upvalueindex(1));
	luaL_Buffer b;
	int n = lua_gettop(L);

	luaL_buffinit(L, &b);
	for (int i = 1; i <= n; i++) {
		lua_getglobal(L, "tostring");
		lua_pushvalue(L, i);
		lua_call(L, 1, 1);
		if (i > 1)
			luaL_addchar(&b, '\t');
		luaL_addvalue(&b);
	}
	luaL_pushresult(&b);
	mr_log(MR_LEVEL_INFO, name, "%s", lua_tostring(L, -1));
	return 0;
}

/* os keeps only what cannot block or take a lock. */
static void restrict_libraries(lua_State *L, const char *name)
{
	static const char *const os_kept[] = { "time", "clock", "difftime", "getenv" };

	lua_pushnil(L);
	lua_setglobal(L, "io");
	lua_newtable(L);
	lua_getglobal(L, "os");
	for (size_t i = 0; i < sizeof(os_kept) / sizeof(os_kept[0]); i++) {
		lua_getfield(L, -1, os_kept[i]);
		lua_setfield(L, -3, os_kept[i]);
	}
	lua_pop(L, 1);
	lua_setglobal(L, "os");
	lua_pushstring(L, name);
	lua_pushcclosure(L, print_to_log, 1);
	lua_setglobal(L, "print");
}

static void set_host_table(lua_State *L, struct mr_script *s, const char *imported, size_t imported_len)
{
	lua_getglobal(L, "package");
	lua_getfield(L, -1, "loaded");
	lua_newtable(L);
	lua_pushnumber(L, (lua_Number)(uintptr_t)s);
	lua_setfield(L, -2, "script");
	lua_pushstring(L, s->name);
	lua_setfield(L, -2, "name");
	lua_pushboolean(L, s->canary);
	lua_setfield(L, -2, "canary");
	if (imported) {
		lua_pushlstring(L, imported, imported_len);
		lua_setfield(L, -2, "imported");
	}
	if (s->host->config_text) {
		lua_pushstring(L, s->host->config_name);
		lua_setfield(L, -2, "config_name");
		lua_pushstring(L, s->host->config_text);
		lua_setfield(L, -2, "config_text");
	}
	lua_setfield(L, -2, "moonrover.host");
	lua_pop(L, 2);
}

lua_State *mr_script_state_new(struct mr_script *s, const char *package_path, const char *imported,
			       size_t imported_len)
{
	lua_State *L = luaL_newstate();

	if (!L)
		return NULL;
	luaL_openlibs(L);
	lua_getglobal(L, "package");
	lua_pushstring(L, package_path);
	lua_setfield(L, -2, "path");
	lua_pushstring(L, "");
	lua_setfield(L, -2, "cpath");
	lua_pop(L, 1);
	restrict_libraries(L, s->name);
	set_host_table(L, s, imported, imported_len);
	return L;
}
