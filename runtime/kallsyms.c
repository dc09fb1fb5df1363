/* kallsyms.c - parses "address type name [module]" lines of /proc/kallsyms,
 * keeping text symbols, and finds the symbol of a kernel address. */
#include "kallsyms.h"
#include "growarray.h"
#include "line_reader.h"
#include "sorted_find.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READ_BUFFER (256 * 1024)

static int is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

/* Parses the hex address at *p and moves *p past it; sscanf costs more than
 * the rest of the load together on 100k+ lines. */
static int parse_hex(const char **p, unsigned long long *out)
{
	const char *s = *p;
	unsigned long long v = 0;
	int digits = 0;

	for (;; s++, digits++) {
		char c = *s;

		if (c >= '0' && c <= '9')
			v = v * 16 + (unsigned)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			v = v * 16 + (unsigned)((c | 0x20) - 'a' + 10);
		else
			break;
	}
	*p = s;
	*out = v;
	return digits > 0 && digits <= 16;
}

struct loader {
	struct mr_kallsyms *k;
	size_t cap;
};

static int add_line(void *ctx, const char *line)
{
	struct loader *l = ctx;
	struct mr_kallsyms *k = l->k;
	unsigned long long addr;
	const char *p = line, *name;
	size_t len;
	void *v;
	int rc;

	if (!parse_hex(&p, &addr) || p[0] != ' ' || !is_text(p[1]) || p[2] != ' ')
		return 0;
	name = p + 3;
	len = strcspn(name, " \t\n");
	if (len == 0)
		return 0;
	v = grow_array(k->v, &l->cap, k->n + 1, sizeof(*k->v));
	if (!v)
		return -ENOMEM;
	k->v = v;
	rc = mr_str_blob_add(&k->names, name, len, &k->v[k->n].name);
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

/* The kernel lists its own text in address order; modules may break it. */
static int is_sorted(const struct mr_kallsyms *k)
{
	for (size_t i = 1; i < k->n; i++) {
		if (cmp_ksym(&k->v[i - 1], &k->v[i]) > 0)
			return 0;
	}
	return 1;
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
	struct loader l = { .k = out };
	int rc;

	memset(out, 0, sizeof(*out));
	if (!f)
		return -errno;
	/* Fewer, larger reads: each read re-positions the kernel's iterator. */
	setvbuf(f, NULL, _IOFBF, READ_BUFFER);
	rc = mr_read_lines(f, add_line, &l);
	fclose(f);
	if (rc == 0 && all_zero(out))
		rc = out->n ? -EPERM : -ENOENT;
	if (rc < 0) {
		mr_kallsyms_free(out);
		return rc;
	}
	if (!is_sorted(out))
		qsort(out->v, out->n, sizeof(*out->v), cmp_ksym);
	return 0;
}

const char *mr_kallsyms_find(const struct mr_kallsyms *k, uint64_t addr)
{
	size_t i = mr_floor_index(k->v, k->n, sizeof(*k->v), addr);

	return i < k->n ? k->names.data + k->v[i].name : NULL;
}

void mr_kallsyms_free(struct mr_kallsyms *k)
{
	free(k->v);
	mr_str_blob_free(&k->names);
	memset(k, 0, sizeof(*k));
}
