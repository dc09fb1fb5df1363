/* elf_debug_file.c - looks up separate debug files (build-id path, then
 * .gnu_debuglink candidates verified with zlib's crc32). */
#include "elf/elf_debug_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define DEBUG_ROOT "/usr/lib/debug"

static int open_candidate(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	return fd >= 0 ? fd : -errno;
}

static int open_by_build_id(const char *root, const struct mr_elf_info *info)
{
	char hex[2 * MR_BUILD_ID_MAX + 1];
	char path[PATH_MAX];
	int n;

	if (info->build_id_len < 2)
		return -ENOENT;
	mr_elf_info_build_id_hex(info, hex, sizeof(hex));
	n = snprintf(path, sizeof(path), "%s%s/.build-id/%.2s/%s.debug", root, DEBUG_ROOT, hex, hex + 2);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	return open_candidate(path);
}

static int crc_matches(int fd, uint32_t want)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	ssize_t got;

	while ((got = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32(crc, buf, (uInt)got);
	if (got < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return 0;
	return (uint32_t)crc == want;
}

static int open_checked(const char *path, uint32_t crc)
{
	int fd = open_candidate(path);

	if (fd < 0)
		return fd;
	if (crc_matches(fd, crc))
		return fd;
	close(fd);
	return -ENOENT;
}

/* Tries dir/name, dir/.debug/name and /usr/lib/debug/dir/name under root. */
static int open_by_debuglink(const char *root, const char *dir, const struct mr_elf_info *info)
{
	static const char *const patterns[] = { "%s%s/%s", "%s%s/.debug/%s", "%s" DEBUG_ROOT "%s/%s" };
	char path[PATH_MAX];
	int n, fd = -ENOENT;

	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]) && fd < 0; i++) {
		n = snprintf(path, sizeof(path), patterns[i], root, dir, info->debuglink);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		fd = open_checked(path, info->debuglink_crc);
	}
	return fd;
}

static int open_under(const char *root, const char *dir, const struct mr_elf_info *info)
{
	int fd = open_by_build_id(root, info);

	if (fd < 0 && info->debuglink)
		fd = open_by_debuglink(root, dir, info);
	return fd;
}

int mr_elf_debug_file_open(const char *root, const char *path, const struct mr_elf_info *info)
{
	char dir[PATH_MAX] = ".";
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	int fd;

	if (slash && len >= sizeof(dir))
		return -ENAMETOOLONG;
	if (slash) {
		memcpy(dir, path, len);
		dir[len] = '\0';
	}
	fd = open_under(root, dir, info);
	if (fd < 0 && root[0] != '\0')
		fd = open_under("", dir, info);
	return fd < 0 ? -ENOENT : fd;
}
