/* unnamed_file.c - O_TMPFILE files linked into place when complete (see
 * unnamed_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_test.h"
#include "files/safe_path.h"
#include "files/unnamed_file.h"

/* Set by specs (mr_test_output_fallback) to go down a fallback path. */
static int forced_fallback = MR_TEST_OUTPUT_NORMAL;

void mr_test_output_fallback(int32_t which)
{
	forced_fallback = which;
}

int mr_unnamed_file_create(int dirfd, mode_t mode)
{
	int fd;

	if (forced_fallback == MR_TEST_OUTPUT_NAMED)
		return -EOPNOTSUPP;
	fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
	/* EISDIR: a kernel older than O_TMPFILE sees only its O_DIRECTORY bit */
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR))
		return -EOPNOTSUPP;
	if (fd < 0)
		return -errno;
	return mr_safe_path_exact_mode(fd, mode);
}

/* Links fd as name in dirfd: by the descriptor itself (root has the
 * CAP_DAC_READ_SEARCH this needs), else through /proc. 0 or a negative
 * errno (-EEXIST when the name is taken). */
static int link_as(int dirfd, const char *name, void *arg)
{
	int fd = *(const int *)arg;
	char proc[32];

	if (forced_fallback == MR_TEST_OUTPUT_COPY)
		return -ENOENT;
	if (linkat(fd, "", dirfd, name, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno == EEXIST)
		return -EEXIST;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) == 0 ? 0 : -errno;
}

/* Copies all of the unnamed file from into the new file to. */
static int copy_all(int from, int to)
{
	struct stat st;
	off_t at = 0;

	if (fstat(from, &st) != 0)
		return -errno;
	while (at < st.st_size) {
		ssize_t n = sendfile(to, from, &at, (size_t)(st.st_size - at));

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n == 0)
			return -EIO;
	}
	return fsync(to) == 0 ? 0 : -errno;
}

/* Where the unnamed file cannot be linked (no /proc, no capability): its
 * bytes go into a new temporary file, renamed over name. */
static int copy_into_place(int fd, int dirfd, const char *name, mode_t mode)
{
	char *tmp;
	int to = mr_safe_path_create_temp(dirfd, name, mode, &tmp, NULL, 0), rc;

	if (to < 0)
		return to;
	rc = copy_all(fd, to);
	if (close(to) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) != 0)
		rc = -errno;
	if (rc != 0)
		(void)unlinkat(dirfd, tmp, 0);
	free(tmp);
	return rc;
}

/* Links fd under a new temporary name and renames that over name. */
static int replace(int fd, int dirfd, const char *name)
{
	char *tmp;
	int rc = mr_safe_path_try_temp(dirfd, name, link_as, &fd, &tmp);

	if (rc < 0)
		return rc;
	if (renameat(dirfd, tmp, dirfd, name) != 0) {
		rc = -errno;
		(void)unlinkat(dirfd, tmp, 0);
	}
	free(tmp);
	return rc;
}

int mr_unnamed_file_link(int fd, int dirfd, const char *name, mode_t mode)
{
	int rc = link_as(dirfd, name, &fd);

	if (rc == -EEXIST)
		rc = replace(fd, dirfd, name);
	if (rc == -ENOENT || rc == -EPERM || rc == -EACCES)
		rc = copy_into_place(fd, dirfd, name, mode);
	return rc;
}
