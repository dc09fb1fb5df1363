/* elf_symbols.h - the function symbols of an ELF file (.symtab, else
 * .dynsym), sorted by address for binary search. */
#ifndef MR_ELF_SYMBOLS_H
#define MR_ELF_SYMBOLS_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

struct mr_elf_sym {
	uint64_t addr;
	uint64_t size;  /* 0 when unknown: the symbol reaches the next one */
	uint32_t name;  /* offset in names */
	uint32_t rank;  /* among aliases at one address, lower is preferred */
};

struct mr_elf_symbols {
	struct mr_elf_sym *v;
	size_t n;
	char *names;
	size_t names_len;
};

/* Reads STT_FUNC and STT_GNU_IFUNC symbols: from .symtab, else from .dynsym.
 * A file with neither gives an empty table. 0, -ENOEXEC or -ENOMEM. */
int mr_elf_symbols_read(Elf *e, struct mr_elf_symbols *out);
/* The name of the function containing vaddr, or NULL. */
const char *mr_elf_symbols_find(const struct mr_elf_symbols *s, uint64_t vaddr);
/* Heap bytes held by the table. */
size_t mr_elf_symbols_bytes(const struct mr_elf_symbols *s);
void mr_elf_symbols_free(struct mr_elf_symbols *s);

#endif
