/* sym_kallsyms.c - parses "address type name [module]" lines of
 * /proc/kallsyms, keeping text symbols. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "files/file_read.h"
#include "symbols/sym_kallsyms.h"

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

/* Kernel symbols have no size: each reaches the next. The rank is the line
 * number, so the first name listed at an address wins. */
static int add_line(void *ctx, const char *line)
{
	struct mr_sym_table *t = ctx;
	unsigned long long addr;
	const char *p = line, *name;
	size_t len;

	if (!parse_hex(&p, &addr) || p[0] != ' ' || !is_text(p[1]) || p[2] != ' ')
		return 0;
	name = p + 3;
	len = strcspn(name, " \t\n");
	if (len == 0)
		return 0;
	return mr_sym_table_add(t, addr, 0, name, len, (uint32_t)t->n);
}

static int all_zero(const struct mr_sym_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i].addr != 0)
			return 0;
	}
	return 1;
}

int mr_sym_kallsyms_load(const char *path, struct mr_sym_table *out)
{
	FILE *f = fopen(path, "re");
	int rc;

	memset(out, 0, sizeof(*out));
	if (!f)
		return -errno;
	/* Fewer, larger reads: each read re-positions the kernel's iterator. */
	setvbuf(f, NULL, _IOFBF, READ_BUFFER);
	rc = mr_file_read_lines(f, add_line, out);
	fclose(f);
	if (rc == 0 && all_zero(out))
		rc = out->n ? -EPERM : -ENOENT;
	if (rc < 0) {
		mr_sym_table_free(out);
		return rc;
	}
	mr_sym_table_sort(out);
	return 0;
}
