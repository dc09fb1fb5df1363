/* safe_path.h - creating files safely: finding the directory a file is to be
 * created in without following a symbolic link that another user planted,
 * and creating a new file there under a temporary name. Each directory of the
 * path is opened in turn (O_PATH, never following), and a link met on the way
 * is followed only where the kernel would follow it with
 * fs.protected_symlinks=1: anywhere but a sticky world-writable directory,
 * and there only a link of ours or of that directory's owner. That holds
 * whatever the machine's setting is (Debian ships 1, but it is often 0 in
 * containers and on other distributions). The caller then works relative to
 * the directory found (openat, renameat, ...), so a link swapped in later
 * changes nothing. */
#ifndef MR_FILES_SAFE_PATH_H
#define MR_FILES_SAFE_PATH_H

#include <stddef.h>
#include <sys/types.h>

/* Opens the directory that holds path's last component (O_PATH, close-on-
 * exec) and returns its descriptor, with that component's offset in path in
 * *name_at. On failure returns a negative errno and writes why into err
 * (without the path: the caller says what it was doing). A path that ends in
 * "/", ".", ".." or names nothing is refused with -EISDIR or -EINVAL. */
int mr_safe_path_open_dir(const char *path, size_t *name_at, char *err, size_t errlen);
/* One attempt at making the temporary name tmp in dirfd: a descriptor or 0,
 * -EEXIST when the name is taken (another one is tried), another negative
 * errno to give up. */
typedef int (*mr_safe_path_try_fn)(int dirfd, const char *tmp, void *arg);
/* Calls try_fn with new names NAME.XXXXXX (random letters) until one is not
 * taken, and returns what it returned: on success (not negative) with the
 * malloc'd name in *tmp_name; -EIO when no random bytes could be had. */
int mr_safe_path_try_temp(int dirfd, const char *name, mr_safe_path_try_fn try_fn, void *arg,
			  char **tmp_name);
/* Gives the new file fd exactly mode, whatever the umask: returns fd, or
 * closes it and returns a negative errno. */
int mr_safe_path_exact_mode(int fd, mode_t mode);
/* Creates a new file NAME.XXXXXX (random letters) in dirfd, exclusively and
 * never through a link, write-only and close-on-exec, with exactly mode
 * (whatever the umask). Returns its descriptor and its malloc'd name in
 * *tmp_name, or a negative errno with why in err. */
int mr_safe_path_create_temp(int dirfd, const char *name, mode_t mode, char **tmp_name, char *err,
			     size_t errlen);

#endif
