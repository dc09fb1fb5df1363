/* script_memory.c - the allocator of a script's Lua state: LuaJIT's own
 * allocator on an arena of the state's own (the arena of a second, empty
 * state), counting the bytes held against the budget. It holds the
 * watchdog's interrupt back while it is inside the allocator, so a jump out
 * of the state never leaves the arena's bookkeeping half done; closing the
 * second state frees the whole arena, even under a state left by a jump. */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "api_test.h"

#include "base/log.h"
#include "script_host/script_memory.h"
#include "script_host/watchdog.h"

/* Freeing a state larger than this gives its pages back to the system. */
#define TRIM_ABOVE (1u << 20)

/* Set once this LuaJIT refused lua_newstate with our allocator (the builds
 * script_memory.h names), so that it is asked once; main thread only. */
static int newstate_refused;

/* The time a chunk gets in mr_script_memory_try. */
#define TRY_BUDGET_MS 20000

/* Whether growing a block from osize to nsize bytes would take the state
 * past its budget during a call. */
static int over_budget(const struct mr_script_memory *m, size_t osize, size_t nsize)
{
	return m->enforce && nsize > osize && m->used - osize + nsize > m->limit;
}

/* The state ran past its budget: the call ends like one out of time (a
 * jump out of the state, which is then freed). The allocation is refused
 * only when no call can be ended, and goes through (a little past the
 * budget) while runtime code has control, until it returns to Lua: LuaJIT
 * (2.1 of 2022) can crash when an allocation fails in JIT-compiled code. */
static int stop_call(struct mr_script_memory *m, int held)
{
	m->exceeded = 1;
	return mr_script_watchdog_abort(held);
}

static void *wrapped_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct mr_script_memory *m = ud;
	size_t old = ptr ? osize : 0;
	int held = mr_script_watchdog_hold();
	void *p = NULL;

	if (!(nsize > 0 && over_budget(m, old, nsize) && !stop_call(m, held)))
		p = m->wrapped(m->wrapped_ud, ptr, osize, nsize);
	if (p || nsize == 0)
		m->used = m->used - old + nsize;
	mr_script_watchdog_resume(held);
	return p;
}

static int panic(lua_State *L)
{
	mr_log(MR_LEVEL_ERROR, "agent", "unprotected error in a script's Lua state: %s",
	       lua_tostring(L, -1) ? lua_tostring(L, -1) : "(not a string)");
	return 0;
}

/* A state allocating from the arena of a second state, or NULL where this
 * LuaJIT refuses (newstate_refused). */
static lua_State *open_on_arena(struct mr_script_memory *m)
{
	lua_State *L;

	if (newstate_refused)
		return NULL;
	m->arena = luaL_newstate();
	if (!m->arena)
		return NULL;
	m->wrapped = lua_getallocf(m->arena, &m->wrapped_ud);
	L = lua_newstate(wrapped_alloc, m);
	newstate_refused = !L;
	if (!L) {
		lua_close(m->arena);
		m->arena = NULL;
	}
	return L;
}

lua_State *mr_script_memory_open(struct mr_script_memory *m, size_t limit, int wrapped)
{
	lua_State *L = NULL;

	memset(m, 0, sizeof(*m));
	m->limit = limit;
	if (!wrapped)
		L = open_on_arena(m);
	if (L) {
		lua_atpanic(L, panic);
		return L;
	}
	L = luaL_newstate();
	if (!L)
		return NULL;
	m->wrapped = lua_getallocf(L, &m->wrapped_ud);
	m->used = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
	lua_setallocf(L, wrapped_alloc, m);
	return L;
}

size_t mr_script_memory_close(struct mr_script_memory *m, lua_State *L, int abandoned)
{
	size_t held = m->used;

	m->enforce = 0;
	if (L && !abandoned && !m->arena)
		lua_setallocf(L, m->wrapped, m->wrapped_ud); /* so that LuaJIT frees its arena */
	if (L && !abandoned)
		lua_close(L);
	if (m->arena) {
		lua_close(m->arena); /* and with it every block L still had */
		m->arena = NULL;
		m->used = 0;
	}
	if (held > TRIM_ABOVE)
		malloc_trim(0);
	return held;
}

int32_t mr_script_memory_try(const char *chunk, uint64_t limit, int32_t wrapped, uint64_t *held,
			     uint64_t *counted, char *err, size_t errlen)
{
	struct mr_script_memory m;
	lua_State *L;
	int rc = mr_script_watchdog_init(), jumped;

	if (rc != 0)
		return mr_error(err, errlen, rc, "cannot set up the watchdog: %s", strerror(-rc));
	L = mr_script_memory_open(&m, (size_t)limit, wrapped);
	if (!L)
		return mr_error(err, errlen, -ENOMEM, "out of memory for a Lua state");
	luaL_openlibs(L);
	rc = luaL_loadstring(L, chunk);
	if (rc == 0) {
		m.enforce = 1;
		rc = mr_script_watchdog_pcall(L, 0, 0, 0, TRY_BUDGET_MS);
		m.enforce = 0;
	}
	jumped = rc == -1;
	*held = m.used;
	*counted = jumped ? 0
			  : (uint64_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (uint64_t)lua_gc(L, LUA_GCCOUNTB, 0);
	if (m.exceeded)
		rc = 1;
	else if (jumped)
		rc = mr_error(err, errlen, -ETIME, "ran past %d ms", TRY_BUDGET_MS);
	else if (rc != 0)
		rc = mr_error(err, errlen, -EINVAL, "%s", lua_tostring(L, -1));
	mr_script_memory_close(&m, L, jumped);
	return rc;
}
