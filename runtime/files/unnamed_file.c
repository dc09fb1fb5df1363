/* unnamed_file.c - O_TMPFILE files linked into place when complete (see
 * unnamed_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "files/safe_path.h"
#include "files/unnamed_file.h"

#define TEMP_TRIES 100

int mr_unnamed_file_create(int dirfd, mode_t mode, char *err, size_t errlen)
{
	int fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode), e;

	/* EISDIR: a kernel older than O_TMPFILE sees only its O_DIRECTORY bit */
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR))
		return mr_error(err, errlen, -EOPNOTSUPP, "unnamed files are not supported here");
	if (fd < 0)
		return mr_error(err, errlen, -errno, "%s", strerror(errno));
	if (fchmod(fd, mode) == 0)
		return fd;
	e = errno;
	(void)close(fd);
	return mr_error(err, errlen, -e, "%s", strerror(e));
}

/* Links fd as name in dirfd; 0 or a negative errno (-EEXIST when taken). */
static int link_as(int fd, int dirfd, const char *name)
{
	char proc[32];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) == 0 ? 0 : -errno;
}

/* Links fd under a new temporary name and renames that over name. */
static int replace(int fd, int dirfd, const char *name)
{
	size_t len = strlen(name);
	char *tmp = malloc(len + 8);
	int rc = -EEXIST;

	if (!tmp)
		return -ENOMEM;
	for (int i = 0; i < TEMP_TRIES && rc == -EEXIST; i++) {
		rc = mr_safe_path_temp_name(tmp, name, len);
		if (rc == 0)
			rc = link_as(fd, dirfd, tmp);
	}
	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) != 0) {
		rc = -errno;
		(void)unlinkat(dirfd, tmp, 0);
	}
	free(tmp);
	return rc;
}

int mr_unnamed_file_link(int fd, int dirfd, const char *name, char *err, size_t errlen)
{
	int rc = link_as(fd, dirfd, name);

	if (rc == -EEXIST)
		rc = replace(fd, dirfd, name);
	return rc ? mr_error(err, errlen, rc, "%s", strerror(-rc)) : 0;
}
