/* sym_plt.h - names for the PLT stubs of an ELF file ("malloc@plt"), which
 * have no symbol of their own, built from its PLT relocations as perf does. */
#ifndef MR_SYMBOLS_SYM_PLT_H
#define MR_SYMBOLS_SYM_PLT_H

#include <gelf.h>

#include "symbols/sym_table.h"

/* Appends a "name@plt" entry, one stub long, for each PLT stub of e (x86-64:
 * .plt.sec when the file has one, else .plt after its header). Files without
 * PLT relocations, or for another machine, add nothing. 0 or -ENOMEM. */
int mr_sym_plt_read(Elf *e, struct mr_sym_table *out);

#endif
