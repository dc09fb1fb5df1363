/* sym_file.h - one parsed ELF file as the symbolizer keeps it: the segments
 * of the mapped file and the function symbols (its own, or those of its
 * separate debug file), plus the bookkeeping fields of the file cache. */
#ifndef MR_SYMBOLS_SYM_FILE_H
#define MR_SYMBOLS_SYM_FILE_H

#include "elf/elf_file.h"
#include "symbols/sym_elf.h"

struct mr_sym_file {
	struct mr_elf_info info;
	struct mr_sym_table syms;
	char build_id[2 * MR_BUILD_ID_MAX + 1]; /* hex, "" when none */
	size_t bytes;                           /* heap bytes held */
	/* owned by sym_file_cache.c */
	char *key;
	unsigned refs;
	struct mr_sym_file *lru_prev;
	struct mr_sym_file *lru_next;
};

/* Builds a file from the ELF e, taking ownership of info (freed on failure
 * too). Symbols come from e's .symtab, else from the separate debug file
 * found through root and path (see elf/elf_debug_file.h), else from e's .dynsym. */
int mr_sym_file_load(Elf *e, struct mr_elf_info *info, const char *root, const char *path,
		     struct mr_sym_file **out);
/* The raw (mangled) name of the function at file offset, or NULL. With
 * return_address, offset is one (see mr_sym_table_find_return). */
const char *mr_sym_file_lookup(const struct mr_sym_file *f, uint64_t offset, int return_address);
void mr_sym_file_free(struct mr_sym_file *f);

#endif
