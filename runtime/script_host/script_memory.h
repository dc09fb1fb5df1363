/* script_memory.h - a memory budget per script. Every allocation of a
 * script's Lua state goes through an allocator that counts what the state
 * holds; during the script's calls, the allocation that would take it past
 * its budget is not made and the call is ended instead, like a call out of
 * time (see watchdog.h). The blocks come from an arena of the state's own
 * (LuaJIT's allocator, as fast as the default), so a state left by such a
 * jump is freed by dropping the arena, without touching the state.
 *
 * LuaJIT builds whose lua_newstate refuses a custom allocator (64-bit builds
 * without GC64) count around LuaJIT's allocator of the state itself: the
 * budget holds the same, but an abandoned state cannot be freed. */
#ifndef MR_SCRIPT_HOST_SCRIPT_MEMORY_H
#define MR_SCRIPT_HOST_SCRIPT_MEMORY_H

#include <stddef.h>

#include <lua.h>

struct mr_script_memory {
	size_t used;       /* bytes held */
	size_t limit;      /* the budget */
	int enforce;       /* a call is running: its budget holds */
	int exceeded;      /* a call ran past the budget */
	lua_State *arena;  /* the empty state whose allocator and arena the script's state uses, or NULL */
	lua_Alloc wrapped; /* the allocator counted */
	void *wrapped_ud;
};

/* A new state whose memory m accounts for, with a budget of limit bytes;
 * wrapped asks for the counting wrapper even where tracking works (specs).
 * NULL when out of memory. */
lua_State *mr_script_memory_open(struct mr_script_memory *m, size_t limit, int wrapped);
/* Closes L (running its finalizers) or, when abandoned, frees its blocks
 * without touching it. Returns the bytes it held. */
size_t mr_script_memory_close(struct mr_script_memory *m, lua_State *L, int abandoned);

#endif
