/* kallsyms.c - parses "address type name [module]" lines of /proc/kallsyms,
 * keeping text symbols, and finds the symbol of a kernel address. */
#include "kallsyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

static int add_line(struct mr_kallsyms *k, size_t *cap, const char *line)
{
	unsigned long long addr;
	char type;
	int name_pos = -1;
	size_t len;
	void *v = k->v;
	int rc;

	if (sscanf(line, "%llx %c %n", &addr, &type, &name_pos) < 2 || name_pos < 0 || !is_text(type))
		return 0;
	len = strcspn(line + name_pos, " \t\n");
	if (len == 0)
		return 0;
	rc = mr_sym_grow(&v, cap, k->n + 1, sizeof(*k->v));
	k->v = v;
	if (rc == 0)
		rc = mr_str_blob_add(&k->names, line + name_pos, len, &k->v[k->n].name);
	if (rc < 0)
		return rc;
	k->v[k->n++].addr = addr;
	return 0;
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct mr_ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static int all_zero(const struct mr_kallsyms *k)
{
	for (size_t i = 0; i < k->n; i++) {
		if (k->v[i].addr != 0)
			return 0;
	}
	return 1;
}

int mr_kallsyms_load(const char *path, struct mr_kallsyms *out)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t linecap = 0, cap = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!f)
		return -errno;
	while (rc == 0 && getline(&line, &linecap, f) >= 0)
		rc = add_line(out, &cap, line);
	if (rc == 0 && ferror(f))
		rc = -EIO;
	free(line);
	fclose(f);
	if (rc == 0 && all_zero(out))
		rc = out->n ? -EPERM : -ENOENT;
	if (rc < 0) {
		mr_kallsyms_free(out);
		return rc;
	}
	qsort(out->v, out->n, sizeof(*out->v), cmp_ksym);
	return 0;
}

const char *mr_kallsyms_find(const struct mr_kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	lo--;
	while (lo > 0 && k->v[lo - 1].addr == k->v[lo].addr)
		lo--;
	return k->names.data + k->v[lo].name;
}

void mr_kallsyms_free(struct mr_kallsyms *k)
{
	free(k->v);
	mr_str_blob_free(&k->names);
	memset(k, 0, sizeof(*k));
}
