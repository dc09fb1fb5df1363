/* script_state.c - builds a script's Lua state. package.loaded["moonrover.script_context"]
 * carries what lua/moonrover/agent.lua needs: the script handle (an address,
 * cast once to mr_script * through the FFI), its name, whether this is the
 * canary run, and the state its previous version exported. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lualib.h>

#include "files/file_read.h"
#include "base/log.h"
#include "script_host/script.h"
#include "script_host/script_set.h"
#include "script_host/script_state.h"
#include "script_host/script_traceback.h"
#include "script_host/script_trust.h"
#include "script_host/watchdog.h"

/* Scripts are source text; anything larger is a mistake, not a script. */
#define MAX_SCRIPT_BYTES (16 << 20)

int mr_script_traceback(lua_State *L)
{
	const char *msg = lua_tostring(L, 1);

	luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
	return 1;
}

/* print(...): one info line, marked when the canary prints it. */
static int print_to_log(lua_State *L)
{
	const char *name = lua_tostring(L, lua_upvalueindex(1));
	int canary = lua_toboolean(L, lua_upvalueindex(2));
	luaL_Buffer b;
	int n = lua_gettop(L);

	luaL_buffinit(L, &b);
	for (int i = 1; i <= n; i++) {
		if (i > 1)
			luaL_addchar(&b, '\t');
		lua_getglobal(L, "tostring");
		lua_pushvalue(L, i);
		lua_call(L, 1, 1);
		luaL_addvalue(&b);
	}
	luaL_pushresult(&b);
	mr_script_watchdog_leave();
	mr_log(MR_LEVEL_INFO, name, "%s%s", canary ? "(canary) " : "", lua_tostring(L, -1));
	mr_script_watchdog_enter();
	return 0;
}

/* os.time() without a date table (mktime takes libc's time-zone lock). */
static int time_now(lua_State *L)
{
	if (!lua_isnoneornil(L, 1))
		return luaL_error(L, "os.time with a date table is not available in agent scripts");
	lua_pushnumber(L, (lua_Number)time(NULL));
	return 1;
}

/* Whether the file may run (see script_trust.h): the user's files are
 * checked, the bundled ones are the installation's. */
static int trusted(const struct mr_script *s, int fd, const char *path, char *why, size_t whylen)
{
	const char *dir = s->set->user_dir;
	size_t n = dir ? strlen(dir) : 0;
	struct stat st;

	if (fstat(fd, &st) != 0)
		return mr_error(why, whylen, -errno, "cannot read %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return mr_error(why, whylen, -EINVAL, "cannot read %s: not a regular file", path);
	if (s->set->unsafe_scripts || !n || strncmp(path, dir, n) != 0 || path[n] != '/')
		return 0;
	return mr_script_trust_file(fd, path, dir, why, whylen);
}

/* Reads a whole script or module file. 0, or -1 with the reason in why. */
static int read_source(const struct mr_script *s, const char *path, char **text, size_t *len, char *why,
		       size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), rc;

	if (fd < 0)
		return mr_error(why, whylen, -errno, "cannot read %s: %s", path, strerror(errno));
	rc = trusted(s, fd, path, why, whylen);
	if (rc == 0 && (rc = mr_file_read_fd(fd, MAX_SCRIPT_BYTES, text, len)) != 0)
		mr_error(why, whylen, rc, "cannot read %s: %s", path,
			 rc == -EFBIG ? "larger than 16 MiB" : strerror(-rc));
	close(fd);
	return rc;
}

/* Reads a whole file with the interrupt held back (the kernel, stdio and
 * malloc may take locks), then compiles it in the Lua state. */
static int load_file(lua_State *L, const struct mr_script *s, const char *path)
{
	char why[512] = "";
	char *text = NULL;
	size_t len = 0;
	int rc;

	mr_script_watchdog_leave();
	rc = read_source(s, path, &text, &len, why, sizeof(why));
	mr_script_watchdog_enter();
	if (rc != 0) {
		lua_pushstring(L, why);
		return LUA_ERRFILE;
	}
	lua_pushfstring(L, "@%s", path);
	rc = luaL_loadbuffer(L, text, len, lua_tostring(L, -1));
	lua_remove(L, -2);
	mr_script_watchdog_leave();
	free(text);
	mr_script_watchdog_enter();
	return rc;
}

static const struct mr_script *script_of(lua_State *L)
{
	return lua_touserdata(L, lua_upvalueindex(1));
}

int mr_script_state_load(struct mr_script *s, const char *path)
{
	return load_file(s->L, s, path);
}

static int loadfile_safe(lua_State *L)
{
	if (load_file(L, script_of(L), luaL_checkstring(L, 1)) != 0) {
		lua_pushnil(L);
		lua_insert(L, -2);
		return 2;
	}
	return 1;
}

static int dofile_safe(lua_State *L)
{
	if (load_file(L, script_of(L), luaL_checkstring(L, 1)) != 0)
		return lua_error(L);
	lua_call(L, 0, LUA_MULTRET);
	return lua_gettop(L) - 1;
}

/* package.loaders[2]: finds name along package.path and loads it safely. */
static int search_lua_file(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	const char *path;

	lua_getglobal(L, "package");
	lua_getfield(L, -1, "path");
	lua_getglobal(L, "package");
	lua_getfield(L, -1, "searchpath");
	if (!lua_isfunction(L, -1))
		return luaL_error(L, "package.searchpath is missing");
	lua_pushstring(L, name);
	lua_pushvalue(L, -4);
	lua_call(L, 2, 2);
	path = lua_tostring(L, -2);
	if (!path)
		return 1; /* the message from searchpath */
	if (load_file(L, script_of(L), path) != 0)
		return lua_error(L);
	return 1;
}

/* io goes, os keeps only what cannot block or take a lock, and everything
 * that reads files does so with the interrupt held back. */
static void restrict_libraries(lua_State *L, const struct mr_script *s)
{
	static const char *const os_kept[] = { "clock", "difftime", "getenv" };

	lua_pushnil(L);
	lua_setglobal(L, "io");
	lua_newtable(L);
	lua_getglobal(L, "os");
	for (size_t i = 0; i < sizeof(os_kept) / sizeof(os_kept[0]); i++) {
		lua_getfield(L, -1, os_kept[i]);
		lua_setfield(L, -3, os_kept[i]);
	}
	lua_pop(L, 1);
	lua_pushcfunction(L, time_now);
	lua_setfield(L, -2, "time");
	lua_setglobal(L, "os");
	lua_getglobal(L, "package");
	lua_getfield(L, -1, "loaded");
	lua_pushnil(L);
	lua_setfield(L, -2, "io");
	lua_getglobal(L, "os");
	lua_setfield(L, -2, "os");
	lua_pop(L, 1);
	lua_getfield(L, -1, "loaders");
	lua_pushlightuserdata(L, (void *)s);
	lua_pushcclosure(L, search_lua_file, 1);
	lua_rawseti(L, -2, 2);
	lua_pop(L, 2);
	lua_pushlightuserdata(L, (void *)s);
	lua_pushcclosure(L, loadfile_safe, 1);
	lua_setglobal(L, "loadfile");
	lua_pushlightuserdata(L, (void *)s);
	lua_pushcclosure(L, dofile_safe, 1);
	lua_setglobal(L, "dofile");
	lua_pushstring(L, s->name);
	lua_pushboolean(L, s->canary);
	lua_pushcclosure(L, print_to_log, 2);
	lua_setglobal(L, "print");
}

static void set_context_table(lua_State *L, struct mr_script *s, const char *imported, size_t imported_len)
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
	if (s->set->config_text) {
		lua_pushstring(L, s->set->config_name);
		lua_setfield(L, -2, "config_name");
		lua_pushstring(L, s->set->config_text);
		lua_setfield(L, -2, "config_text");
	}
	lua_setfield(L, -2, "moonrover.script_context");
	lua_pop(L, 2);
}

lua_State *mr_script_state_new(struct mr_script *s, const char *package_path, const char *imported,
			       size_t imported_len)
{
	lua_State *L = mr_script_memory_open(&s->memory, s->set->memory_limit, 0);

	if (!L)
		return NULL;
	luaL_openlibs(L);
	lua_pushcfunction(L, mr_script_traceback_user);
	s->ref_traceback = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_getglobal(L, "package");
	lua_pushstring(L, package_path);
	lua_setfield(L, -2, "path");
	lua_pushstring(L, "");
	lua_setfield(L, -2, "cpath");
	lua_pop(L, 1);
	restrict_libraries(L, s);
	set_context_table(L, s, imported, imported_len);
	return L;
}
