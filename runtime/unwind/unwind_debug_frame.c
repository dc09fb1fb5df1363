/* unwind_debug_frame.c - finds .debug_frame, lists where its FDEs start
 * (dwarf_next_cfi walks the section's entries; an FDE's first field after
 * its CIE pointer is its initial location, an address of the file's word
 * size) and opens it with libdw for its rules. */
#include "unwind/unwind_debug_frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"

static Elf_Scn *find_section(Elf *e, const char *name)
{
	size_t strndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(e, &strndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		const char *s = gelf_getshdr(scn, &sh) ? elf_strptr(e, strndx, sh.sh_name) : NULL;

		if (s && strcmp(s, name) == 0 && sh.sh_type == SHT_PROGBITS)
			return scn;
	}
	return NULL;
}

static Elf_Data *section_data(Elf_Scn *scn)
{
	GElf_Shdr sh;

	if (!gelf_getshdr(scn, &sh))
		return NULL;
	if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return NULL;
	return elf_getdata(scn, NULL);
}

static uint64_t address_at(const uint8_t *p, size_t size)
{
	uint64_t v64 = 0;
	uint32_t v32 = 0;

	if (size == 8) {
		memcpy(&v64, p, 8);
		return v64;
	}
	memcpy(&v32, p, 4);
	return v32;
}

static int add_start(struct mr_unwind_debug_frame *df, size_t *cap, uint64_t start)
{
	uint64_t *grown = mr_grow_array(df->starts, cap, df->n + 1, sizeof(*df->starts));

	if (!grown)
		return -ENOMEM;
	df->starts = grown;
	df->starts[df->n++] = start;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The FDE starts of the section's data, sorted. */
static int list_starts(Elf *e, Elf_Data *d, struct mr_unwind_debug_frame *df)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(e, NULL);
	size_t word = gelf_getclass(e) == ELFCLASS64 ? 8 : 4, cap = 0;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry entry;
	int rc = 0;

	if (!ident)
		return -ENOENT;
	while (rc == 0 && dwarf_next_cfi(ident, d, false, off, &next, &entry) == 0) {
		const uint8_t *end = (const uint8_t *)d->d_buf + d->d_size;

		if (!dwarf_cfi_cie_p(&entry) && entry.fde.start + word <= end)
			rc = add_start(df, &cap, address_at(entry.fde.start, word));
		off = next;
	}
	if (rc == 0 && df->n)
		qsort(df->starts, df->n, sizeof(*df->starts), cmp_u64);
	return rc;
}

int mr_unwind_debug_frame_open(Elf *e, struct mr_unwind_debug_frame *df)
{
	Elf_Scn *scn = find_section(e, ".debug_frame");
	Elf_Data *d;
	int rc;

	memset(df, 0, sizeof(*df));
	if (!scn)
		return -ENOENT;
	df->dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
	df->cfi = df->dw ? dwarf_getcfi(df->dw) : NULL;
	d = df->cfi ? section_data(scn) : NULL;
	rc = !df->cfi ? -ENOENT : !d || !d->d_buf ? -ENOTSUP : list_starts(e, d, df);
	if (rc != 0)
		mr_unwind_debug_frame_close(df);
	return rc;
}

void mr_unwind_debug_frame_close(struct mr_unwind_debug_frame *df)
{
	free(df->starts);
	if (df->dw)
		dwarf_end(df->dw);
	memset(df, 0, sizeof(*df));
}
