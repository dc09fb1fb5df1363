/* intern.h - a string interner: each distinct text gets one dense id.
 *
 * Id 0 is always "" (so that 0 can mean "none"). The texts live back to back
 * in one buffer, so pointers from mr_intern_get() move when a later add grows it. */
#ifndef MR_BASE_INTERN_H
#define MR_BASE_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "base/hash_index.h"

struct mr_intern {
	char *text; /* every string, NUL-terminated, back to back */
	size_t text_len;
	size_t text_cap;
	size_t *offsets; /* offsets[id]: where string id starts in text */
	size_t count;
	size_t offsets_cap;
	struct mr_hash_index index;
};

/* Returns 0 or -ENOMEM; on success "" has id 0. */
int mr_intern_init(struct mr_intern *in);
void mr_intern_free(struct mr_intern *in);
/* Returns the id of s (NULL counts as ""), or MR_HASH_NONE when out of memory. */
uint32_t mr_intern_add(struct mr_intern *in, const char *s);
/* Returns the text of id, or "" for an unknown id. */
const char *mr_intern_get(const struct mr_intern *in, uint32_t id);

#endif
