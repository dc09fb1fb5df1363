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

/* The levels a traceback looks at: all of them, or on a deep stack (one
 * that overflowed) the WINDOW nearest each end, with the gap between them
 * counted as frames shown but never read. Every lua_getstack walks from the
 * top, so reading each level of 20,000 takes quadratic time: seconds, past
 * any budget, for a plain error. */
struct levels {
	int depth;    /* the deepest level, 0 when only the handler runs */
	int top_last; /* levels 1 .. top_last are read */
	int gap;      /* levels top_last + 1 .. top_last + gap are not */
};

#define WINDOW 64

/* The deepest level there is: doubling, then halving. */
static int stack_depth(lua_State *L)
{
	lua_Debug ar;
	int have = 0, probe = 1;

	while (lua_getstack(L, probe, &ar)) {
		have = probe;
		probe *= 2;
	}
	while (probe - have > 1) {
		int mid = have + (probe - have) / 2;

		if (lua_getstack(L, mid, &ar))
			have = mid;
		else
			probe = mid;
	}
	return have;
}

static struct levels levels_of(lua_State *L)
{
	struct levels lv = { .depth = stack_depth(L) };

	lv.top_last = lv.depth;
	if (lv.depth > 2 * WINDOW) {
		lv.top_last = WINDOW;
		lv.gap = lv.depth - 2 * WINDOW;
	}
	return lv;
}

/* The level read after level (0 to start), skipping the gap; 0 past the end. */
static int next_level(const struct levels *lv, int level)
{
	level++;
	if (level == lv->top_last + 1)
		level += lv->gap;
	return level <= lv->depth ? level : 0;
}

/* Counts the frames shown, notes the first of the script's own and the
 * source name of an API frame. */
static int scan(lua_State *L, const struct levels *lv, lua_Debug *user, int *has_user, char *api_src,
		size_t api_len)
{
	lua_Debug ar;
	int shown = lv->gap;

	for (int level = next_level(lv, 0); level && lua_getstack(L, level, &ar);
	     level = next_level(lv, level)) {
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

/* The one "..." that stands for the frames between the first and the last. */
static void elide(luaL_Buffer *b, int *elided)
{
	if (!*elided)
		luaL_addstring(b, "\n\t...");
	*elided = 1;
}

/* Adds the frame at index (counted among those shown) when it is one of
 * the first or the last. */
static void add_shown(lua_State *L, luaL_Buffer *b, const lua_Debug *ar, int index, int shown, int *elided)
{
	if (index <= FIRST_FRAMES || index > shown - LAST_FRAMES)
		add_frame(L, b, ar);
	else
		elide(b, elided);
}

int mr_script_traceback_user(lua_State *L)
{
	const char *msg = lua_tostring(L, 1);
	char api_src[LUA_IDSIZE] = "";
	struct levels lv = levels_of(L);
	lua_Debug ar, user;
	int has_user = 0, shown, index = 0, elided = 0;
	luaL_Buffer b;

	shown = scan(L, &lv, &user, &has_user, api_src, sizeof(api_src));
	luaL_buffinit(L, &b);
	add_message(&b, msg ? msg : "(error object is not a string)", api_src, has_user ? &user : NULL);
	luaL_addstring(&b, "\nstack traceback:");
	for (int level = next_level(&lv, 0); level && lua_getstack(L, level, &ar);
	     level = next_level(&lv, level)) {
		if (lv.gap && level == lv.top_last + lv.gap + 1) {
			index += lv.gap;
			elide(&b, &elided);
		}
		lua_getinfo(L, "Sln", &ar);
		if (!hidden(L, level, &ar))
			add_shown(L, &b, &ar, ++index, shown, &elided);
	}
	luaL_pushresult(&b);
	return 1;
}
