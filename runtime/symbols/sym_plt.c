/* sym_plt.c - PLT stub names from .rela.plt (see sym_plt.h). On x86-64 the
 * i-th relocation of .rela.plt belongs to the i-th stub: in .plt.sec (16 bytes
 * each, built with -fcf-protection, Debian's default) or, without it, in .plt
 * after the 16-byte header that calls the resolver. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "symbols/sym_plt.h"

#define PLT_ENTRY 16
#define PLT_NAME_MAX 512

struct plt_sections {
	GElf_Shdr stubs;     /* .plt.sec, else .plt */
	uint64_t first_stub; /* address of the stub of relocation 0 */
	Elf_Data *relocs;    /* .rela.plt */
	size_t nrelocs;
	Elf_Data *dynsym; /* the symbols the relocations name */
	size_t dynstr;    /* section index of their names */
};

static Elf_Scn *section_named(Elf *e, size_t shstrndx, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(e, shstrndx, sh->sh_name);
		if (n && strcmp(n, name) == 0)
			return scn;
	}
	return NULL;
}

static int find_stubs(Elf *e, size_t shstrndx, struct plt_sections *p)
{
	if (section_named(e, shstrndx, ".plt.sec", &p->stubs)) {
		p->first_stub = p->stubs.sh_addr;
		return 0;
	}
	if (section_named(e, shstrndx, ".plt", &p->stubs)) {
		p->first_stub = p->stubs.sh_addr + PLT_ENTRY;
		return 0;
	}
	return -ENOENT;
}

static int find_relocs(Elf *e, size_t shstrndx, struct plt_sections *p)
{
	GElf_Shdr rela, sym;
	Elf_Scn *scn = section_named(e, shstrndx, ".rela.plt", &rela);
	Elf_Scn *symscn;

	if (!scn || rela.sh_type != SHT_RELA || rela.sh_entsize == 0)
		return -ENOENT;
	symscn = elf_getscn(e, rela.sh_link);
	if (!symscn || !gelf_getshdr(symscn, &sym) || sym.sh_type == SHT_NOBITS)
		return -ENOENT;
	p->relocs = elf_getdata(scn, NULL);
	p->dynsym = elf_getdata(symscn, NULL);
	if (!p->relocs || !p->dynsym)
		return -ENOENT;
	p->nrelocs = rela.sh_size / rela.sh_entsize;
	p->dynstr = sym.sh_link;
	return 0;
}

static int find_sections(Elf *e, struct plt_sections *p)
{
	GElf_Ehdr eh;
	size_t shstrndx;

	if (!gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64 || elf_getshdrstrndx(e, &shstrndx) != 0)
		return -ENOENT;
	if (find_stubs(e, shstrndx, p) != 0 || p->stubs.sh_type == SHT_NOBITS)
		return -ENOENT;
	return find_relocs(e, shstrndx, p);
}

/* The name relocation i binds its stub to, or NULL (IRELATIVE has none). */
static const char *target_name(Elf *e, const struct plt_sections *p, size_t i)
{
	GElf_Rela r;
	GElf_Sym sym;
	const char *name;

	if (i > INT32_MAX || !gelf_getrela(p->relocs, (int)i, &r))
		return NULL;
	if (GELF_R_SYM(r.r_info) == 0 || !gelf_getsym(p->dynsym, (int)GELF_R_SYM(r.r_info), &sym))
		return NULL;
	name = elf_strptr(e, p->dynstr, sym.st_name);
	return name && name[0] ? name : NULL;
}

int mr_sym_plt_read(Elf *e, struct mr_sym_table *out)
{
	struct plt_sections p;
	char label[PLT_NAME_MAX];
	int rc = 0;

	memset(&p, 0, sizeof(p));
	if (find_sections(e, &p) != 0)
		return 0;
	for (size_t i = 0; i < p.nrelocs && rc == 0; i++) {
		uint64_t addr = p.first_stub + i * PLT_ENTRY;
		const char *name = target_name(e, &p, i);
		int n;

		if (!name || addr + PLT_ENTRY > p.stubs.sh_addr + p.stubs.sh_size)
			continue;
		n = snprintf(label, sizeof(label), "%s@plt", name);
		if (n > 0 && (size_t)n < sizeof(label))
			rc = mr_sym_table_add(out, addr, PLT_ENTRY, label, (size_t)n, 0);
	}
	return rc;
}
