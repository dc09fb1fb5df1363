/* elf_symbols.c - loads function symbols with libelf in two passes (count,
 * then copy), sorts them, keeps one name per address, and searches them. */
#include "elf_symbols.h"

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
	if (*nbytes > UINT32_MAX)
		return -E2BIG;
	return 0;
}

static void copy_pass(const struct symtab_ref *t, struct mr_elf_symbols *out)
{
	GElf_Sym sym;
	const char *name;
	size_t len;

	for (size_t i = 0; i < t->count; i++) {
		name = func_name(t, i, &sym);
		if (!name)
			continue;
		len = strlen(name);
		out->v[out->n].addr = sym.st_value;
		out->v[out->n].size = sym.st_size;
		out->v[out->n].name = (uint32_t)out->names_len;
		out->v[out->n].rank = rank_of(&sym, name, len);
		memcpy(out->names + out->names_len, name, len + 1);
		out->names_len += len + 1;
		out->n++;
	}
}

static int cmp_sym(const void *a, const void *b)
{
	const struct mr_elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Sorts and keeps the preferred symbol of each address. */
static void sort_unique(struct mr_elf_symbols *s)
{
	size_t w = 0;

	qsort(s->v, s->n, sizeof(*s->v), cmp_sym);
	for (size_t r = 0; r < s->n; r++) {
		if (w > 0 && s->v[w - 1].addr == s->v[r].addr)
			continue;
		s->v[w++] = s->v[r];
	}
	s->n = w;
}

int mr_elf_symbols_read(Elf *e, struct mr_elf_symbols *out)
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
	out->v = malloc(nsyms * sizeof(*out->v));
	out->names = malloc(nbytes);
	if (!out->v || !out->names) {
		mr_elf_symbols_free(out);
		return -ENOMEM;
	}
	copy_pass(&t, out);
	sort_unique(out);
	return 0;
}

const char *mr_elf_symbols_find(const struct mr_elf_symbols *s, uint64_t vaddr)
{
	size_t lo = 0, hi = s->n;
	const struct mr_elf_sym *sym;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	sym = &s->v[lo - 1];
	if (sym->size != 0 && vaddr - sym->addr >= sym->size)
		return NULL;
	return s->names + sym->name;
}

size_t mr_elf_symbols_bytes(const struct mr_elf_symbols *s)
{
	return s->n * sizeof(*s->v) + s->names_len;
}

void mr_elf_symbols_free(struct mr_elf_symbols *s)
{
	free(s->v);
	free(s->names);
	memset(s, 0, sizeof(*s));
}
