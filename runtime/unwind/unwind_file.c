/* unwind_file.c - the unwind table of a file given by descriptor or path:
 * opens it as ELF and builds its table (unwind_table.c). */
#include "unwind/unwind_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "elf/elf_file.h"

int mr_unwind_file_build(int fd, struct mr_unwind_table **out)
{
	Elf *e;
	int rc = elf_version(EV_CURRENT) == EV_NONE ? -ENOSYS : mr_elf_open(fd, &e);

	if (rc != 0)
		return rc;
	rc = mr_unwind_table_build(e, out);
	elf_end(e);
	return rc;
}

mr_unwind_table *mr_unwind_table_open(const char *path, char *err, size_t errlen)
{
	struct mr_unwind_table *t = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc = fd < 0 ? -errno : mr_unwind_file_build(fd, &t);

	if (fd >= 0)
		close(fd);
	if (rc != 0)
		return mr_fail_null(mr_error(err, errlen, rc, "no unwind table for %s: %s", path,
					     rc == -ENOENT ? "it has neither .eh_frame_hdr nor .debug_frame"
							   : strerror(-rc)));
	return t;
}

int mr_unwind_table_lookup(const mr_unwind_table *t, uint64_t vaddr, struct mr_unwind_row *out)
{
	const struct mr_unwind_row *r = mr_unwind_table_row(t, vaddr);

	if (!r)
		return -ENOENT;
	*out = *r;
	return 0;
}

void mr_unwind_table_stats(const mr_unwind_table *t, struct mr_unwind_table_stats *out)
{
	*out = t->stats;
}
