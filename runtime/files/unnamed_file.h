/* unnamed_file.h - files that have no name until they are complete: created
 * with O_TMPFILE in a directory found by files/safe_path.h, written, then
 * linked into place. A process killed before that (even by SIGKILL) leaves
 * nothing behind: the kernel frees a file no name refers to. */
#ifndef MR_FILES_UNNAMED_FILE_H
#define MR_FILES_UNNAMED_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* Creates an unnamed regular file in dirfd, write-only and close-on-exec,
 * with exactly mode (whatever the umask), and returns its descriptor.
 * Returns -EOPNOTSUPP where the kernel or the file system cannot (the caller
 * falls back to a temporary name), another negative errno with why in err. */
int mr_unnamed_file_create(int dirfd, mode_t mode, char *err, size_t errlen);
/* Gives the unnamed file fd the name name in dirfd, replacing what is there
 * in one step (linked under a temporary name, then renamed over it). Returns
 * 0, or a negative errno with why in err. */
int mr_unnamed_file_link(int fd, int dirfd, const char *name, char *err, size_t errlen);

#endif
