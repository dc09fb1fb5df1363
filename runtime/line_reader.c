/* line_reader.c - getline loop with error handling in one place. */
#include <errno.h>
#include <stdlib.h>

#include "line_reader.h"

int mr_read_lines(FILE *f, int (*fn)(void *ctx, const char *line), void *ctx)
{
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;

	while (rc >= 0 && getline(&line, &cap, f) >= 0)
		rc = fn(ctx, line);
	free(line);
	if (rc >= 0 && ferror(f))
		rc = -EIO;
	return rc < 0 ? rc : 0;
}
