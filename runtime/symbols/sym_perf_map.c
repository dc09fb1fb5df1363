/* sym_perf_map.c - parses perf JIT map files into a symbol table. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "files/file_read.h"
#include "symbols/sym_perf_map.h"

/* A later line replaces an earlier one at the same start: its rank is lower. */
static int add_line(void *ctx, const char *line)
{
	struct mr_sym_table *t = ctx;
	unsigned long long start, size;
	int name_pos = -1;
	size_t len;

	if (sscanf(line, "%llx %llx %n", &start, &size, &name_pos) < 2 || name_pos < 0 || size == 0)
		return 0;
	len = strcspn(line + name_pos, "\n");
	if (len == 0)
		return 0;
	return mr_sym_table_add(t, start, size, line + name_pos, len, UINT32_MAX - (uint32_t)t->n);
}

int mr_sym_perf_map_load(const char *path, struct mr_sym_table *out)
{
	FILE *f = fopen(path, "re");
	int rc;

	memset(out, 0, sizeof(*out));
	if (!f)
		return -errno;
	rc = mr_file_read_lines(f, add_line, out);
	fclose(f);
	if (rc < 0) {
		mr_sym_table_free(out);
		return rc;
	}
	mr_sym_table_sort(out);
	return 0;
}
