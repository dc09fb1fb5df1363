/* script_memory.h - a memory budget per script. Every allocation of a
 * script's Lua state goes through an allocator that counts what the state
 * holds and refuses growth past the budget while the script runs (LuaJIT then
 * raises "not enough memory" in the script). The allocator keeps its blocks
 * in a list, so a state abandoned mid-call (interrupted by the watchdog) is
 * freed block by block without touching the state itself.
 *
 * LuaJIT builds whose lua_newstate refuses a custom allocator (x86-64 without
 * GC64) get a counting wrapper around LuaJIT's own allocator instead: the
 * budget holds the same, but an abandoned state cannot be freed. */
#ifndef MR_SCRIPT_HOST_SCRIPT_MEMORY_H
#define MR_SCRIPT_HOST_SCRIPT_MEMORY_H

#include <stddef.h>

#include <lua.h>

struct mr_script_memory_block {
	struct mr_script_memory_block *prev, *next;
} __attribute__((aligned(16)));

struct mr_script_memory {
	struct mr_script_memory_block blocks; /* the list's head */
	size_t used;                          /* bytes held, bookkeeping included */
	size_t limit;                         /* the budget */
	int enforce;                          /* refuse growth past the budget (in protected calls) */
	int exceeded;                         /* a growth was refused */
	int tracked;                          /* 1: our blocks; 0: counting LuaJIT's allocator */
	lua_Alloc wrapped;                    /* LuaJIT's allocator, when not tracked */
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
