/* file_read.h - reading files: whole (into the caller's buffer, or into one
 * allocated up to a bound) and line by line. Whole reads go on until the end
 * of the file, since /proc files report a size of 0. */
#ifndef MR_FILES_FILE_READ_H
#define MR_FILES_FILE_READ_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Reads path into buf, at most cap - 1 bytes (the rest is cut), and ends it
 * with a NUL. Returns the length, or a negative errno. */
ssize_t mr_file_read_into(const char *path, char *buf, size_t cap);
/* Reads all of path into a malloc'd, NUL-terminated buffer (*out, *len).
 * Returns 0, -EFBIG when it holds more than max bytes, or another -errno. */
int mr_file_read_all(const char *path, size_t max, char **out, size_t *len);
/* The same from an open file, to its end; fd stays open. */
int mr_file_read_fd(int fd, size_t max, char **out, size_t *len);
/* Reads fd until want bytes arrived or the file ended (retrying EINTR and
 * short reads). Returns the count, or a negative errno. */
ssize_t mr_file_read_upto(int fd, char *buf, size_t want);
/* Calls fn(ctx, line) for every line of f (with its newline, if any) until
 * fn returns a negative errno, which is returned. Returns 0, that error, or
 * -EIO when reading fails. */
int mr_file_read_lines(FILE *f, int (*fn)(void *ctx, const char *line), void *ctx);

#endif
