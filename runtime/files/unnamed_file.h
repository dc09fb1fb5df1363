/* unnamed_file.h - files that have no name until they are complete: created
 * with O_TMPFILE in a directory found by files/safe_path.h, written, then
 * linked into place. A process killed before that (even by SIGKILL) leaves
 * nothing behind: the kernel frees a file no name refers to. */
#ifndef MR_FILES_UNNAMED_FILE_H
#define MR_FILES_UNNAMED_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* Creates an unnamed regular file in dirfd, read-write and close-on-exec,
 * with exactly mode (whatever the umask), and returns its descriptor.
 * Returns -EOPNOTSUPP where the kernel or the file system cannot (the caller
 * falls back to a temporary name), another negative errno otherwise. */
int mr_unnamed_file_create(int dirfd, mode_t mode);
/* Gives the unnamed file fd the name name in dirfd, replacing what is there
 * in one step (linked under a temporary name, then renamed over it). Where
 * it cannot be linked at all (no /proc and no CAP_DAC_READ_SEARCH) its bytes
 * are copied into a new temporary file of that mode, renamed over name: the
 * data is never lost. Returns 0 or a negative errno. */
int mr_unnamed_file_link(int fd, int dirfd, const char *name, mode_t mode);

#endif
