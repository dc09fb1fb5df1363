/* line_reader.h - calls a function for each line of a text stream, for the
 * /proc and map-file parsers. */
#ifndef MR_LINE_READER_H
#define MR_LINE_READER_H

#include <stdio.h>

/* Calls fn(ctx, line) for every line of f (with its newline, if any) until
 * fn returns a negative errno, which is returned. Returns 0, that error, or
 * -EIO when reading fails. */
int mr_read_lines(FILE *f, int (*fn)(void *ctx, const char *line), void *ctx);

#endif
