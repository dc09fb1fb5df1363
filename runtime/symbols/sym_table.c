/* sym_table.c - sorted symbol table (see sym_table.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "symbols/sym_table.h"

int mr_sym_table_reserve(struct mr_sym_table *t, size_t n, size_t bytes)
{
	void *v = mr_grow_array(t->v, &t->cap, t->n + n, sizeof(*t->v));
	char *names;

	if (!v)
		return -ENOMEM;
	t->v = v;
	names = mr_grow_array(t->names, &t->names_cap, t->names_len + bytes, 1);
	if (!names)
		return -ENOMEM;
	t->names = names;
	return 0;
}

int mr_sym_table_add(struct mr_sym_table *t, uint64_t addr, uint64_t size, const char *name, size_t len,
		     uint32_t rank)
{
	int rc;

	if (t->names_len + len + 1 > UINT32_MAX)
		return -E2BIG;
	rc = mr_sym_table_reserve(t, 1, len + 1);
	if (rc)
		return rc;
	memcpy(t->names + t->names_len, name, len);
	t->names[t->names_len + len] = '\0';
	t->v[t->n++] = (struct mr_sym_entry){
		.addr = addr, .size = size, .name = (uint32_t)t->names_len, .rank = rank
	};
	t->names_len += len + 1;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct mr_sym_entry *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Sources such as kallsyms are mostly in order already: check before sorting. */
static int is_sorted(const struct mr_sym_table *t)
{
	for (size_t i = 1; i < t->n; i++) {
		if (cmp_entry(&t->v[i - 1], &t->v[i]) > 0)
			return 0;
	}
	return 1;
}

void mr_sym_table_sort(struct mr_sym_table *t)
{
	size_t w = 0;

	if (!is_sorted(t))
		qsort(t->v, t->n, sizeof(*t->v), cmp_entry);
	for (size_t r = 0; r < t->n; r++) {
		if (w > 0 && t->v[w - 1].addr == t->v[r].addr)
			continue;
		t->v[w++] = t->v[r];
	}
	t->n = w;
}

/* The entry at or below addr that covers it, or NULL. */
static const struct mr_sym_entry *find_entry(const struct mr_sym_table *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;
	const struct mr_sym_entry *e;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	e = &t->v[lo - 1];
	if (e->size != 0 && addr - e->addr >= e->size)
		return NULL;
	return e;
}

const char *mr_sym_table_find(const struct mr_sym_table *t, uint64_t addr)
{
	const struct mr_sym_entry *e = find_entry(t, addr);

	return e ? t->names + e->name : NULL;
}

/* Where the kernel makes a signal handler return to: its "return address"
 * is the trampoline's first byte, not an address after a call. */
static int is_signal_return(const char *name)
{
	static const char *const trampolines[] = { "__restore_rt", "__kernel_rt_sigreturn",
						   "__vdso_rt_sigreturn" };

	for (size_t i = 0; i < sizeof(trampolines) / sizeof(trampolines[0]); i++)
		if (strcmp(name, trampolines[i]) == 0)
			return 1;
	return 0;
}

const char *mr_sym_table_find_return(const struct mr_sym_table *t, uint64_t addr)
{
	const struct mr_sym_entry *e = find_entry(t, addr);

	if (e && e->addr == addr && is_signal_return(t->names + e->name))
		return t->names + e->name;
	return addr ? mr_sym_table_find(t, addr - 1) : NULL;
}

size_t mr_sym_table_bytes(const struct mr_sym_table *t)
{
	return t->n * sizeof(*t->v) + t->names_len;
}

void mr_sym_table_free(struct mr_sym_table *t)
{
	free(t->v);
	free(t->names);
	memset(t, 0, sizeof(*t));
}
