/* script_traceback.c - tracebacks for script errors. The agent API raises
 * errors at the caller's level, but its frames (and the C functions they
 * called, such as error) still sit on the stack: they are left out, so the
 * first frame shown is the script's. Messages positioned inside the API
 * (a runtime call's conversion error, say) are moved to the script's line. */
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "script_host/script_traceback.h"

/* Frames shown at most: the first ones, then "...", then the last. */
#define FIRST_FRAMES 12
#define LAST_FRAMES 10

static const char *const API_MODULES[] = { "/moonrover/agent.lua", "/moonrover/rt.lua" };

static int in_api(const lua_Debug *ar)
{
	size_t len = strlen(ar->source);

	for (size_t i = 0; i < sizeof(API_MODULES) / sizeof(API_MODULES[0]); i++) {
		size_t n = strlen(API_MODULES[i]);

		if (ar->source[0] == '@' && len > n && strcmp(ar->source + len - n, API_MODULES[i]) == 0)
			return 1;
	}
	return 0;
}

/* Whether the frame at level belongs to the API: an API module's, or a C
 * function an API module called. */
static int hidden(lua_State *L, int level, lua_Debug *ar)
{
	lua_Debug caller;

	if (in_api(ar))
		return 1;
	if (strcmp(ar->what, "C") != 0 || !lua_getstack(L, level + 1, &caller))
		return 0;
	lua_getinfo(L, "S", &caller);
	return in_api(&caller);
}

static void add_frame(lua_State *L, luaL_Buffer *b, const lua_Debug *ar)
{
	if (ar->currentline > 0)
		lua_pushfstring(L, "\n\t%s:%d: in ", ar->short_src, ar->currentline);
	else
		lua_pushfstring(L, "\n\t%s: in ", ar->short_src);
	luaL_addvalue(b);
	if (*ar->namewhat)
		lua_pushfstring(L, "function '%s'", ar->name);
	else if (*ar->what == 'm')
		lua_pushliteral(L, "main chunk");
	else if (*ar->what == 'C')
		lua_pushliteral(L, "a C function");
	else
		lua_pushfstring(L, "function <%s:%d>", ar->short_src, ar->linedefined);
	luaL_addvalue(b);
}

/* The message, its position moved from an API module (any frame of one
 * named in api_src) to the script's first line on the stack (user). */
static void add_message(luaL_Buffer *b, const char *msg, const char *api_src, const lua_Debug *user)
{
	size_t n = strlen(api_src);
	const char *rest;

	if (n && user && strncmp(msg, api_src, n) == 0 && msg[n] == ':' &&
	    (rest = strstr(msg + n + 1, ": "))) {
		char where[LUA_IDSIZE + 24];

		snprintf(where, sizeof(where), "%s:%d", user->short_src, user->currentline);
		luaL_addstring(b, where);
		luaL_addstring(b, rest);
		return;
	}
	luaL_addstring(b, msg);
}

/* Counts the frames shown, notes the first of the script's own and the
 * source name of an API frame. */
static int scan(lua_State *L, lua_Debug *user, int *has_user, char *api_src, size_t api_len)
{
	lua_Debug ar;
	int shown = 0;

	for (int level = 1; lua_getstack(L, level, &ar); level++) {
		lua_getinfo(L, "Sl", &ar);
		if (in_api(&ar) && !*api_src)
			snprintf(api_src, api_len, "%s", ar.short_src);
		if (hidden(L, level, &ar))
			continue;
		if (!*has_user && *ar.what != 'C' && ar.currentline > 0) {
			*user = ar;
			*has_user = 1;
		}
		shown++;
	}
	return shown;
}

int mr_script_traceback_user(lua_State *L)
{
	const char *msg = lua_tostring(L, 1);
	char api_src[LUA_IDSIZE] = "";
	lua_Debug ar, user;
	int has_user = 0, shown, index = 0;
	luaL_Buffer b;

	shown = scan(L, &user, &has_user, api_src, sizeof(api_src));
	luaL_buffinit(L, &b);
	add_message(&b, msg ? msg : "(error object is not a string)", api_src, has_user ? &user : NULL);
	luaL_addstring(&b, "\nstack traceback:");
	for (int level = 1; lua_getstack(L, level, &ar); level++) {
		lua_getinfo(L, "Sln", &ar);
		if (hidden(L, level, &ar))
			continue;
		index++;
		if (index == FIRST_FRAMES + 1 && shown > FIRST_FRAMES + LAST_FRAMES)
			luaL_addstring(&b, "\n\t...");
		if (index <= FIRST_FRAMES || index > shown - LAST_FRAMES)
			add_frame(L, &b, &ar);
	}
	luaL_pushresult(&b);
	return 1;
}
