/* script_memory.c - the allocator of a script's Lua state: malloc with a
 * header per block linking it into the state's list, the bytes held, and
 * the budget. It holds the watchdog's interrupt back while it is inside
 * malloc, so a jump out of the state never leaves malloc's or the list's
 * bookkeeping half done. */
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

#define HEADER sizeof(struct mr_script_memory_block)
/* Freeing a state larger than this gives its pages back to the system. */
#define TRIM_ABOVE (1u << 20)

/* Set once this LuaJIT refused lua_newstate with our allocator (it says so
 * on standard error each time); main thread only. */
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

static void link_block(struct mr_script_memory *m, struct mr_script_memory_block *b)
{
	b->prev = &m->blocks;
	b->next = m->blocks.next;
	m->blocks.next->prev = b;
	m->blocks.next = b;
}

static void unlink_block(struct mr_script_memory_block *b)
{
	b->prev->next = b->next;
	b->next->prev = b->prev;
}

static void *tracked_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct mr_script_memory *m = ud;
	struct mr_script_memory_block *b = ptr ? (struct mr_script_memory_block *)ptr - 1 : NULL, *nb;
	size_t old = b ? osize + HEADER : 0;
	int held = mr_script_watchdog_hold();

	if (nsize > 0 && over_budget(m, old, nsize + HEADER) && !stop_call(m, held)) {
		mr_script_watchdog_resume(held);
		return NULL;
	}
	if (b)
		unlink_block(b);
	if (nsize == 0) {
		free(b);
		m->used -= old;
		mr_script_watchdog_resume(held);
		return NULL;
	}
	nb = realloc(b, nsize + HEADER);
	if (nb) {
		m->used = m->used - old + nsize + HEADER;
		b = nb;
	}
	if (b)
		link_block(m, b);
	mr_script_watchdog_resume(held);
	return nb ? nb + 1 : NULL;
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

lua_State *mr_script_memory_open(struct mr_script_memory *m, size_t limit, int wrapped)
{
	lua_State *L = NULL;

	memset(m, 0, sizeof(*m));
	m->blocks.prev = m->blocks.next = &m->blocks;
	m->limit = limit;
	if (!wrapped && !newstate_refused) {
		L = lua_newstate(tracked_alloc, m);
		newstate_refused = !L;
	}
	if (L) {
		m->tracked = 1;
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
	if (L && !abandoned && !m->tracked)
		lua_setallocf(L, m->wrapped, m->wrapped_ud); /* so that LuaJIT frees its arena */
	if (L && !abandoned)
		lua_close(L);
	if (m->tracked) {
		while (m->blocks.next != &m->blocks) {
			struct mr_script_memory_block *b = m->blocks.next;

			unlink_block(b);
			free(b);
		}
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
