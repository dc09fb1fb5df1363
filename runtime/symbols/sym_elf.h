/* sym_elf.h - the function symbols of an ELF file (.symtab, else .dynsym)
 * loaded into a symbol table. */
#ifndef MR_SYMBOLS_SYM_ELF_H
#define MR_SYMBOLS_SYM_ELF_H

#include <gelf.h>

#include "symbols/sym_table.h"

/* Reads STT_FUNC and STT_GNU_IFUNC symbols: from .symtab, else from .dynsym,
 * ranked so that mr_sym_table_sort keeps the preferred name of aliases at
 * one address. A symbol without a size covers its own address only. A file
 * with neither table gives an empty one. 0, -ENOEXEC, -E2BIG or -ENOMEM. */
int mr_sym_elf_read(Elf *e, struct mr_sym_table *out);

#endif
