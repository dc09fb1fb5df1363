/* elf_file.c - reads PT_LOAD segments, NT_GNU_BUILD_ID and .gnu_debuglink
 * from an ELF file with libelf. */
#include "elf/elf_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

int mr_elf_open(int fd, Elf **out)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	if (!e)
		return -ENOEXEC;
	if (elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -ENOEXEC;
	}
	*out = e;
	return 0;
}

static int read_segments(Elf *e, struct mr_elf_info *out)
{
	size_t n;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n) != 0)
		return -ENOEXEC;
	if (n == 0)
		return 0;
	out->segs = calloc(n, sizeof(*out->segs));
	if (!out->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		out->segs[out->nsegs].offset = ph.p_offset;
		out->segs[out->nsegs].filesz = ph.p_filesz;
		out->segs[out->nsegs].vaddr = ph.p_vaddr;
		out->nsegs++;
	}
	return 0;
}

static void read_build_id(Elf_Data *d, struct mr_elf_info *out)
{
	GElf_Nhdr nh;
	size_t off = 0, next, name_off, desc_off;

	while (off < d->d_size && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)d->d_buf + name_off, "GNU", 4) == 0 && nh.n_descsz > 0 &&
		    nh.n_descsz <= MR_BUILD_ID_MAX) {
			memcpy(out->build_id, (const char *)d->d_buf + desc_off, nh.n_descsz);
			out->build_id_len = nh.n_descsz;
			return;
		}
		off = next;
	}
}

static uint32_t read_u32(const unsigned char *p, int msb)
{
	if (msb)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static int read_debuglink(Elf *e, Elf_Data *d, struct mr_elf_info *out)
{
	const unsigned char *p = d->d_buf;
	const char *ident = elf_getident(e, NULL);
	size_t len, crc_off;

	if (!p || !ident || out->debuglink)
		return 0;
	len = strnlen((const char *)p, d->d_size);
	crc_off = (len + 4) & ~(size_t)3;
	if (len == 0 || crc_off + 4 > d->d_size || memchr(p, '/', len))
		return 0;
	out->debuglink = strndup((const char *)p, len);
	if (!out->debuglink)
		return -ENOMEM;
	out->debuglink_crc = read_u32(p + crc_off, ident[EI_DATA] == ELFDATA2MSB);
	return 0;
}

static int read_section(Elf *e, Elf_Scn *scn, size_t shstrndx, struct mr_elf_info *out)
{
	GElf_Shdr sh;
	Elf_Data *d;
	const char *name;

	if (!gelf_getshdr(scn, &sh))
		return 0;
	if (sh.sh_type == SHT_SYMTAB && sh.sh_size > 0) {
		out->has_symtab = 1;
		return 0;
	}
	if (sh.sh_type == SHT_NOBITS)
		return 0;
	name = elf_strptr(e, shstrndx, sh.sh_name);
	if (sh.sh_type == SHT_NOTE && out->build_id_len == 0) {
		d = elf_getdata(scn, NULL);
		if (d && d->d_buf)
			read_build_id(d, out);
	} else if (name && strcmp(name, ".gnu_debuglink") == 0) {
		d = elf_getdata(scn, NULL);
		if (d)
			return read_debuglink(e, d, out);
	}
	return 0;
}

static int read_sections(Elf *e, struct mr_elf_info *out)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int rc;

	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return 0; /* no section headers: segments alone still convert offsets */
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		rc = read_section(e, scn, shstrndx, out);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int mr_elf_info_read(Elf *e, struct mr_elf_info *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = read_segments(e, out);
	if (rc == 0)
		rc = read_sections(e, out);
	if (rc < 0)
		mr_elf_info_free(out);
	return rc;
}

int mr_elf_info_vaddr(const struct mr_elf_info *info, uint64_t offset, uint64_t *vaddr)
{
	for (size_t i = 0; i < info->nsegs; i++) {
		const struct mr_elf_segment *s = &info->segs[i];

		if (offset >= s->offset && offset - s->offset < s->filesz) {
			*vaddr = offset - s->offset + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

void mr_elf_info_build_id_hex(const struct mr_elf_info *info, char *buf, size_t len)
{
	size_t i;

	buf[0] = '\0';
	for (i = 0; i < info->build_id_len && 2 * i + 2 < len; i++)
		snprintf(buf + 2 * i, 3, "%02x", info->build_id[i]);
}

void mr_elf_info_free(struct mr_elf_info *info)
{
	free(info->segs);
	free(info->debuglink);
	info->segs = NULL;
	info->nsegs = 0;
	info->debuglink = NULL;
}
