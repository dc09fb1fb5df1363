/* elf_file.h - what the symbolizer needs from an ELF file besides symbols:
 * PT_LOAD segments (file offset -> virtual address), the GNU build-id and
 * the .gnu_debuglink name and CRC. */
#ifndef MR_ELF_ELF_FILE_H
#define MR_ELF_ELF_FILE_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#define MR_BUILD_ID_MAX 64

struct mr_elf_segment {
	uint64_t offset;
	uint64_t filesz;
	uint64_t vaddr;
};

struct mr_elf_info {
	struct mr_elf_segment *segs;
	size_t nsegs;
	unsigned char build_id[MR_BUILD_ID_MAX];
	size_t build_id_len; /* 0 when the file has none */
	char *debuglink;     /* .gnu_debuglink file name, NULL when none */
	uint32_t debuglink_crc;
	int has_symtab; /* a non-empty .symtab is present */
};

/* Starts reading fd as an ELF file. 0, or -ENOEXEC when it is not one. */
int mr_elf_open(int fd, Elf **out);
int mr_elf_info_read(Elf *e, struct mr_elf_info *out);
/* Converts a file offset to a virtual address through the PT_LOAD segment
 * containing it. 0, or -ENOENT when no segment does. */
int mr_elf_info_vaddr(const struct mr_elf_info *info, uint64_t offset, uint64_t *vaddr);
/* Writes the build-id as lowercase hex ("" when none); len >= 2*MR_BUILD_ID_MAX+1. */
void mr_elf_info_build_id_hex(const struct mr_elf_info *info, char *buf, size_t len);
void mr_elf_info_free(struct mr_elf_info *info);

#endif
