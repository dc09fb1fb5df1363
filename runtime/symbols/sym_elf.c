/* sym_elf.c - loads an ELF file's function symbols with libelf in two
 * passes (count, then copy into a table sized once) and ranks aliases. */
#include "symbols/sym_elf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct symtab_ref {
	Elf *elf;
	Elf_Data *data;
	size_t count;
	size_t strndx;
};

static Elf_Scn *find_table(Elf *e, GElf_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		if (gelf_getshdr(scn, sh) && sh->sh_type == type && sh->sh_size > 0)
			return scn;
	}
	return NULL;
}

static int open_table(Elf *e, struct symtab_ref *t)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_table(e, SHT_SYMTAB, &sh);

	if (!scn)
		scn = find_table(e, SHT_DYNSYM, &sh);
	if (!scn)
		return -ENOENT;
	if (sh.sh_entsize == 0)
		return -ENOEXEC;
	t->data = elf_getdata(scn, NULL);
	if (!t->data || !t->data->d_buf)
		return -ENOEXEC;
	t->elf = e;
	t->count = t->data->d_size / sh.sh_entsize;
	t->strndx = sh.sh_link;
	return 0;
}

/* The name of symbol i when it is a defined function, else NULL. */
static const char *func_name(const struct symtab_ref *t, size_t i, GElf_Sym *sym)
{
	int type;
	const char *name;

	if (i > INT32_MAX || !gelf_getsym(t->data, (int)i, sym))
		return NULL;
	type = GELF_ST_TYPE(sym->st_info);
	if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym->st_shndx == SHN_UNDEF)
		return NULL;
	name = elf_strptr(t->elf, t->strndx, sym->st_name);
	return name && name[0] ? name : NULL;
}

/* Prefers sized symbols, fewer leading underscores, global over weak over
 * local binding, then shorter names: "getpid" over "__getpid". */
static uint32_t rank_of(const GElf_Sym *sym, const char *name, size_t len)
{
	uint32_t unders = (uint32_t)strspn(name, "_");
	uint32_t bind;

	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		bind = 0;
		break;
	case STB_WEAK:
		bind = 1;
		break;
	default:
		bind = 2;
		break;
	}
	if (unders > 7)
		unders = 7;
	if (len > 0xffffff)
		len = 0xffffff;
	return (uint32_t)(sym->st_size == 0) << 29 | unders << 26 | bind << 24 | (uint32_t)len;
}

static int count_pass(const struct symtab_ref *t, size_t *nsyms, size_t *nbytes)
{
	GElf_Sym sym;
	const char *name;

	*nsyms = 0;
	*nbytes = 0;
	for (size_t i = 0; i < t->count; i++) {
		name = func_name(t, i, &sym);
		if (!name)
			continue;
		(*nsyms)++;
		*nbytes += strlen(name) + 1;
	}
	return *nbytes > UINT32_MAX ? -E2BIG : 0;
}

static int copy_pass(const struct symtab_ref *t, struct mr_sym_table *out)
{
	GElf_Sym sym;
	const char *name;
	size_t len;
	int rc = 0;

	for (size_t i = 0; i < t->count && rc == 0; i++) {
		name = func_name(t, i, &sym);
		if (!name)
			continue;
		len = strlen(name);
		/* A symbol without a size (_init, _fini, assembly) covers its own
		 * address only: reaching to the next symbol would swallow the PLT
		 * and everything else between them. */
		rc = mr_sym_table_add(out, sym.st_value, sym.st_size ? sym.st_size : 1, name, len,
				      rank_of(&sym, name, len));
	}
	return rc;
}

int mr_sym_elf_read(Elf *e, struct mr_sym_table *out)
{
	struct symtab_ref t;
	size_t nsyms, nbytes;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = open_table(e, &t);
	if (rc == -ENOENT)
		return 0;
	if (rc == 0)
		rc = count_pass(&t, &nsyms, &nbytes);
	if (rc < 0 || nsyms == 0)
		return rc;
	rc = mr_sym_table_reserve(out, nsyms, nbytes);
	if (rc == 0)
		rc = copy_pass(&t, out);
	if (rc < 0)
		mr_sym_table_free(out);
	return rc;
}
