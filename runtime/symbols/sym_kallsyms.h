/* sym_kallsyms.h - kernel text symbols from /proc/kallsyms. */
#ifndef MR_SYMBOLS_SYM_KALLSYMS_H
#define MR_SYMBOLS_SYM_KALLSYMS_H

#include "symbols/sym_table.h"

/* Loads the text symbols (types t, T, w, W) of path into out, sorted; of
 * several symbols at one address the first listed is kept. Returns 0,
 * -EPERM when every address reads as zero (not privileged), or another -errno. */
int mr_sym_kallsyms_load(const char *path, struct mr_sym_table *out);

#endif
