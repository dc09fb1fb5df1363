/* text_file.c - reads a file a user names on the command line (the --config
 * file) whole and once: only a regular file (links are followed), of at most
 * the caller's bound. A FIFO, a device or a directory is refused before it
 * is read, without blocking and without opening a device. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "base/log.h"
#include "files/file_read.h"

/* What a file that is not a regular one is, for the message. */
static const char *kind_of(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO (named pipe)";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a regular file";
}

static int not_regular(const char *path, mode_t mode, char *err, size_t errlen)
{
	return mr_error(err, errlen, -EINVAL, "cannot read %s: it is %s, not a regular file", path,
			kind_of(mode));
}

static int too_large(const char *path, size_t cap, char *err, size_t errlen)
{
	if (cap >= (1u << 20) && cap % (1u << 20) == 0)
		return mr_error(err, errlen, -EFBIG, "cannot read %s: it is larger than %zu MiB", path,
				cap >> 20);
	return mr_error(err, errlen, -EFBIG, "cannot read %s: it is larger than %zu bytes", path, cap);
}

/* Reads fd into buf until cap bytes or the end; one byte more tells a file
 * that grew past cap. The count (cap + 1 for one that grew), or -errno. */
static ssize_t read_bounded(int fd, char *buf, size_t cap)
{
	ssize_t n = mr_file_read_upto(fd, buf, cap), extra;
	char byte;

	if (n < 0 || (size_t)n < cap)
		return n;
	extra = mr_file_read_upto(fd, &byte, 1);
	return extra < 0 ? extra : n + extra;
}

static int64_t read_open(int fd, const char *path, char *buf, size_t cap, char *err, size_t errlen)
{
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) != 0)
		return mr_error(err, errlen, -errno, "cannot read %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return not_regular(path, st.st_mode, err, errlen);
	if ((uint64_t)st.st_size > cap)
		return too_large(path, cap, err, errlen);
	n = read_bounded(fd, buf, cap);
	if (n < 0)
		return mr_error(err, errlen, (int)n, "cannot read %s: %s", path, strerror((int)-n));
	if ((size_t)n > cap)
		return too_large(path, cap, err, errlen);
	return n;
}

int64_t mr_text_file_read(const char *path, char *buf, size_t cap, char *err, size_t errlen)
{
	struct stat st;
	int fd;
	int64_t n;

	if (!path || !buf)
		return mr_error(err, errlen, -EINVAL, "cannot read a file: no name or no buffer given");
	/* stat first: opening a device can have effects, and a FIFO would wait
	 * for a writer; fstat after the open catches a file swapped meanwhile. */
	if (stat(path, &st) != 0)
		return mr_error(err, errlen, -errno, "cannot read %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return not_regular(path, st.st_mode, err, errlen);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return mr_error(err, errlen, -errno, "cannot read %s: %s", path, strerror(errno));
	n = read_open(fd, path, buf, cap, err, errlen);
	if (close(fd) != 0 && n >= 0)
		return mr_error(err, errlen, -errno, "cannot read %s: %s", path, strerror(errno));
	return n;
}
