/* script_memory.h - a memory budget per script. Every allocation of a
 * script's Lua state goes through an allocator that counts what the state
 * holds; during the script's calls, the allocation that would take it past
 * its budget is not made and the call is ended instead, like a call out of
 * time (see watchdog.h). The allocator keeps its blocks in a list, so a state
 * left by such a jump is freed block by block without touching the state.
 *
 * LuaJIT builds whose lua_newstate refuses a custom allocator (64-bit builds
 * without GC64) get a counting wrapper around LuaJIT's own allocator instead:
 * the budget holds the same, but an abandoned state cannot be freed. */
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
	int enforce;                          /* a call is running: its budget holds */
	int exceeded;                         /* a call ran past the budget */
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
