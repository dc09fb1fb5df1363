/* sym_vdso.c - copies the vDSO (found through AT_SYSINFO_EHDR) into a
 * memfd. Its size is where its section headers end: they are the last part
 * of the image. */
#include <elf.h>
#include <errno.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbols/sym_vdso.h"

#define VDSO_MAX_SIZE (64 * 1024)

static long image_size(const Elf64_Ehdr *eh)
{
	unsigned long end = eh->e_shoff + (unsigned long)eh->e_shnum * eh->e_shentsize;

	if (eh->e_ident[EI_MAG0] != ELFMAG0 || eh->e_ident[EI_MAG1] != ELFMAG1 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || end == 0 || end > VDSO_MAX_SIZE)
		return -ENOEXEC;
	return (long)end;
}

int mr_sym_vdso_memfd(void)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	long size;
	int fd, err;

	if (!eh)
		return -ENOENT;
	size = image_size(eh);
	if (size < 0)
		return (int)size;
	fd = memfd_create("moonrover-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, eh, (size_t)size) != size) {
		err = errno ? -errno : -EIO;
		close(fd);
		return err;
	}
	return fd;
}
