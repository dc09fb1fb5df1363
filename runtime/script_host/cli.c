/* cli.c - the command line's Lua state: starts LuaJIT, points it at the
 * bundled modules and hands the command line to lua/moonrover/cli.lua, which
 * does the rest. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "entry.h"
#include "script_host/script_state.h"

static int dir_has(const char *dir, const char *module)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/moonrover/%s", dir, module) >= (int)sizeof(path))
		return 0;
	return access(path, R_OK) == 0;
}

/* The generated modules of the build tree, when its source modules are used. */
static const char *generated_dir;

const char *mr_cli_generated_dir(void)
{
	return generated_dir;
}

/* The modules directory: $MOONROVER_LUA_DIR, then the installed copy, then
 * the source tree the binary was built from. A directory without the
 * generated constants (a source tree) gets the build's generated modules. */
static const char *find_lua_dir(const struct mr_lua_dirs *dirs)
{
	const char *env = getenv("MOONROVER_LUA_DIR");

	if (env && *env) {
		if (!dir_has(env, "consts.lua"))
			generated_dir = dirs->generated;
		return env;
	}
	if (dir_has(dirs->installed, "cli.lua"))
		return dirs->installed;
	generated_dir = dirs->generated;
	return dirs->source;
}

static int set_package_path(lua_State *L, const char *dir)
{
	char path[4 * PATH_MAX];
	const char *gen = generated_dir ? generated_dir : "";

	if (snprintf(path, sizeof(path), "%s/?.lua;%s/?/init.lua%s%s%s", dir, dir, *gen ? ";" : "", gen,
		     *gen ? "/?.lua" : "") >= (int)sizeof(path))
		return -ENAMETOOLONG;
	lua_getglobal(L, "package");
	lua_pushstring(L, path);
	lua_setfield(L, -2, "path");
	lua_pop(L, 1);
	return 0;
}

/* Calls require("moonrover.cli").main(args) and returns its exit code. */
static int run_cli(lua_State *L, int argc, char **argv)
{
	int status;

	lua_pushcfunction(L, mr_script_traceback);
	lua_getglobal(L, "require");
	lua_pushstring(L, "moonrover.cli");
	status = lua_pcall(L, 1, 1, 1);
	if (status != 0) {
		fprintf(stderr, "moonrover: cannot load the bundled scripts: %s\n", lua_tostring(L, -1));
		return 70;
	}
	lua_getfield(L, -1, "main");
	lua_newtable(L);
	for (int i = 1; i < argc; i++) {
		lua_pushstring(L, argv[i]);
		lua_rawseti(L, -2, i);
	}
	status = lua_pcall(L, 1, 1, 1);
	if (status != 0) {
		fprintf(stderr, "moonrover: internal error: %s\n", lua_tostring(L, -1));
		return 70;
	}
	return lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : 0;
}

int mr_cli_main(int argc, char **argv, const struct mr_lua_dirs *dirs)
{
	const char *dir = find_lua_dir(dirs);
	lua_State *L;
	int code;

	if (!dir_has(dir, "cli.lua")) {
		fprintf(stderr, "moonrover: bundled scripts not found in %s (set MOONROVER_LUA_DIR)\n", dir);
		return 70;
	}
	L = luaL_newstate();
	if (!L) {
		fprintf(stderr, "moonrover: cannot create a Lua state: out of memory\n");
		return 70;
	}
	luaL_openlibs(L);
	if (set_package_path(L, dir) != 0) {
		fprintf(stderr, "moonrover: scripts path too long: %s\n", dir);
		lua_close(L);
		return 70;
	}
	code = run_cli(L, argc, argv);
	lua_close(L);
	return code;
}
