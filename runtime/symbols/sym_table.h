/* sym_table.h - the symbolizer's one symbol table: named address ranges
 * sorted for binary search, their names back to back in one buffer. ELF
 * symbol tables, /proc/kallsyms and JIT perf maps are all loaded into it. */
#ifndef MR_SYMBOLS_SYM_TABLE_H
#define MR_SYMBOLS_SYM_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct mr_sym_entry {
	uint64_t addr;
	uint64_t size; /* 0 when unknown: the symbol reaches the next one */
	uint32_t name; /* offset in names */
	uint32_t rank; /* of several entries at one address, the lowest is kept */
};

struct mr_sym_table {
	struct mr_sym_entry *v;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
};

/* Makes room for n more entries and bytes more name bytes (names counted
 * with their NUL), so that loaders that count first allocate once. 0 or -ENOMEM. */
int mr_sym_table_reserve(struct mr_sym_table *t, size_t n, size_t bytes);
/* Appends name[0..len). Returns 0, -ENOMEM, or -E2BIG past 4 GiB of names. */
int mr_sym_table_add(struct mr_sym_table *t, uint64_t addr, uint64_t size, const char *name, size_t len,
		     uint32_t rank);
/* Sorts by address and keeps the lowest-ranked entry of each address. */
void mr_sym_table_sort(struct mr_sym_table *t);
/* The name of the entry at or below addr that covers it, or NULL. Call
 * after mr_sym_table_sort. */
const char *mr_sym_table_find(const struct mr_sym_table *t, uint64_t addr);
/* The function a return address returns into: the one holding addr - 1,
 * where the call is (the address itself may already be the next function's
 * when the call never returns), except at the first byte of a signal return
 * trampoline, which is where a signal handler "returns". NULL when none. */
const char *mr_sym_table_find_return(const struct mr_sym_table *t, uint64_t addr);
/* Heap bytes held. */
size_t mr_sym_table_bytes(const struct mr_sym_table *t);
void mr_sym_table_free(struct mr_sym_table *t);

#endif
