/* string_map.h - a map from strings to pointers, on the runtime's hash index:
 * the symbolizer's interned names, cached files and tracked processes. Keys
 * are copied; a key's copy keeps its address until it is removed. */
#ifndef MR_BASE_STRING_MAP_H
#define MR_BASE_STRING_MAP_H

#include <stddef.h>

struct mr_string_map;
typedef void (*mr_string_map_free_fn)(void *value);

/* free_value (may be NULL) is applied to the values left at mr_string_map_free. */
struct mr_string_map *mr_string_map_new(mr_string_map_free_fn free_value);
void mr_string_map_free(struct mr_string_map *m);
void *mr_string_map_get(const struct mr_string_map *m, const char *key);
/* Sets key -> value, replacing (not freeing) a previous value. Returns 0, or
 * -ENOMEM (only when key was absent). */
int mr_string_map_put(struct mr_string_map *m, const char *key, void *value);
/* The map's own copy of key, added (with a NULL value) when absent; NULL
 * when memory ran out. Interned strings live as long as their entry. */
const char *mr_string_map_intern(struct mr_string_map *m, const char *key);
/* Removes key and returns its value (not freed), NULL when absent. */
void *mr_string_map_take(struct mr_string_map *m, const char *key);
size_t mr_string_map_count(const struct mr_string_map *m);

#endif
