/* sym_map.h - a string-keyed hash map used by the symbolizer for interned
 * names, cached files and tracked processes. Keys are copied. */
#ifndef MR_SYM_MAP_H
#define MR_SYM_MAP_H

#include <stddef.h>

struct mr_sym_map;
typedef void (*mr_sym_map_free_fn)(void *value);

/* free_value (may be NULL) is applied to the values left at mr_sym_map_free. */
struct mr_sym_map *mr_sym_map_new(mr_sym_map_free_fn free_value);
void mr_sym_map_free(struct mr_sym_map *m);
void *mr_sym_map_get(const struct mr_sym_map *m, const char *key);
/* Sets key -> value, replacing (not freeing) a previous value. Returns 0, or
 * -ENOMEM (only when key was absent). */
int mr_sym_map_put(struct mr_sym_map *m, const char *key, void *value);
/* The map's own copy of key, added (with a NULL value) when absent; NULL
 * when memory ran out. Interned strings live as long as the map. */
const char *mr_sym_map_intern(struct mr_sym_map *m, const char *key);
/* Removes key and returns its value (not freed), NULL when absent. */
void *mr_sym_map_take(struct mr_sym_map *m, const char *key);
size_t mr_sym_map_count(const struct mr_sym_map *m);

#endif
