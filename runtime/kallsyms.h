/* kallsyms.h - kernel text symbols from /proc/kallsyms, sorted by address. */
#ifndef MR_KALLSYMS_H
#define MR_KALLSYMS_H

#include "sym_buf.h"

#include <stddef.h>
#include <stdint.h>

struct mr_ksym {
	uint64_t addr;
	uint32_t name; /* offset in names */
};

struct mr_kallsyms {
	struct mr_ksym *v;
	size_t n;
	struct mr_str_blob names;
};

/* Loads text symbols (types t, T, w, W) of path. Returns 0, -EPERM when every
 * address reads as zero (not privileged), or another -errno. */
int mr_kallsyms_load(const char *path, struct mr_kallsyms *out);
/* The name of the nearest symbol at or below addr, or NULL. */
const char *mr_kallsyms_find(const struct mr_kallsyms *k, uint64_t addr);
void mr_kallsyms_free(struct mr_kallsyms *k);

#endif
