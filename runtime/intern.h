/* intern.h - a string interner: each distinct text gets one dense id.
 *
 * Id 0 is always "" (so that 0 can mean "none"). The texts live back to back
 * in one buffer, so pointers from intern_get() move when a later add grows it. */
#ifndef MR_INTERN_H
#define MR_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "hashidx.h"

struct intern {
	char *text;       /* every string, NUL-terminated, back to back */
	size_t text_len;
	size_t text_cap;
	size_t *offsets;  /* offsets[id]: where string id starts in text */
	size_t count;
	size_t offsets_cap;
	struct hashidx index;
};

/* Returns 0 or -ENOMEM; on success "" has id 0. */
int intern_init(struct intern *in);
void intern_free(struct intern *in);
/* Returns the id of s (NULL counts as ""), or HASHIDX_NONE when out of memory. */
uint32_t intern_add(struct intern *in, const char *s);
/* Returns the text of id, or "" for an unknown id. */
const char *intern_get(const struct intern *in, uint32_t id);

#endif
