/* script_memory.c - the allocator of a script's Lua state: malloc with a
 * header per block linking it into the state's list, the bytes held, and
 * the budget. It holds the watchdog's interrupt back while it is inside
 * malloc, so a jump out of the state never leaves malloc's or the list's
 * bookkeeping half done. */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "base/log.h"
#include "script_host/script_memory.h"
#include "script_host/watchdog.h"

#define HEADER sizeof(struct mr_script_memory_block)
/* Freeing a state larger than this gives its pages back to the system. */
#define TRIM_ABOVE (1u << 20)

static int refused(struct mr_script_memory *m, size_t osize, size_t nsize)
{
	if (!m->enforce || nsize <= osize || m->used - osize + nsize <= m->limit)
		return 0;
	m->exceeded = 1;
	return 1;
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
	int held;

	if (nsize > 0 && refused(m, old, nsize + HEADER))
		return NULL;
	held = mr_script_watchdog_hold();
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
	void *p;

	if (nsize > 0 && refused(m, old, nsize))
		return NULL;
	p = m->wrapped(m->wrapped_ud, ptr, osize, nsize);
	if (p || nsize == 0)
		m->used = m->used - old + nsize;
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
	if (!wrapped)
		L = lua_newstate(tracked_alloc, m);
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
