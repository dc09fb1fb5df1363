/* unwind_fde_index.c - reads the FDE start addresses from .eh_frame_hdr:
 * version 1, then the encoded .eh_frame pointer and FDE count, then pairs
 * (initial location, FDE address) relative to the header itself. */
#include "unwind/unwind_fde_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define HDR_FIXED 4

static int find_header(Elf *e, GElf_Phdr *out)
{
	size_t n;

	if (elf_getphdrnum(e, &n) != 0)
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(e, (int)i, out) && out->p_type == PT_GNU_EH_FRAME)
			return 0;
	return -ENOENT;
}

static int32_t s32_at(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Only 4-byte encodings take part: the ones linkers use. */
static int is_4_bytes(unsigned char enc)
{
	unsigned char format = enc & 0x0f;

	return format == DW_EH_PE_udata4 || format == DW_EH_PE_sdata4;
}

static int read_table(const unsigned char *p, size_t size, uint64_t hdr_vaddr, uint64_t **starts, size_t *n)
{
	uint32_t count;
	uint64_t *v;

	if (size < HDR_FIXED + 8 || p[0] != 1 || !is_4_bytes(p[1]) || p[2] != DW_EH_PE_udata4)
		return -ENOTSUP;
	if (p[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return -ENOTSUP;
	memcpy(&count, p + HDR_FIXED + 4, sizeof(count));
	if (count > (size - HDR_FIXED - 8) / 8)
		return -ENOTSUP;
	v = malloc((count ? count : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++)
		v[i] = hdr_vaddr + (int64_t)s32_at(p + HDR_FIXED + 8 + 8 * (size_t)i);
	*starts = v;
	*n = count;
	return 0;
}

int mr_unwind_fde_starts(Elf *e, uint64_t **starts, size_t *n)
{
	GElf_Phdr ph;
	Elf_Data *d;
	int rc = find_header(e, &ph);

	*starts = NULL;
	*n = 0;
	if (rc != 0)
		return rc;
	d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
	if (!d || !d->d_buf)
		return -ENOENT;
	return read_table(d->d_buf, d->d_size, ph.p_vaddr, starts, n);
}
