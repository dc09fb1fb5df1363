/* script_owner.c - a small table of (object, close function, owning script).
 * Global because the runtime functions that open objects are called from Lua
 * without a handle to the calling script; main thread only. */
#include <errno.h>
#include <stdlib.h>

#include "base/grow_array.h"
#include "script_host/script_owner.h"

struct owned {
	void *obj;
	mr_script_owner_close_fn close;
	struct mr_script *owner;
};

static struct mr_script *running;
static struct owned *table;
static size_t count, cap;

void mr_script_owner_set_running(struct mr_script *s)
{
	running = s;
}

struct mr_script *mr_script_owner_running(void)
{
	return running;
}

int mr_script_owner_add(void *obj, mr_script_owner_close_fn close)
{
	struct owned *grown;

	if (!running || !obj)
		return 0;
	grown = mr_grow_array(table, &cap, count + 1, sizeof(*table));
	if (!grown)
		return -ENOMEM;
	table = grown;
	table[count++] = (struct owned){ .obj = obj, .close = close, .owner = running };
	return 0;
}

void mr_script_owner_remove(void *obj)
{
	for (size_t i = 0; i < count; i++) {
		if (table[i].obj == obj) {
			table[i] = table[--count];
			return;
		}
	}
}

void mr_script_owner_close_all(struct mr_script *s)
{
	size_t i = 0;

	while (i < count) {
		if (table[i].owner != s) {
			i++;
			continue;
		}
		struct owned o = table[i];

		table[i] = table[--count];
		o.close(o.obj);
	}
	if (count == 0) {
		free(table);
		table = NULL;
		cap = 0;
	}
}
