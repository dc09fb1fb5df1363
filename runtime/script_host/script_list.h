/* script_list.h - which scripts the agent runs: every *.lua file of the
 * bundled scripts directory and of the user's, the user's replacing a
 * bundled one of the same name, in name order. */
#ifndef MR_SCRIPT_HOST_SCRIPT_LIST_H
#define MR_SCRIPT_HOST_SCRIPT_LIST_H

#include <stddef.h>

struct mr_script_entry {
	char *name; /* file name without .lua */
	char *path;
};

struct mr_script_list {
	struct mr_script_entry *v;
	size_t n;
};

/* user_dir may be NULL. Returns 0, or -1 with the reason in err. */
int mr_script_list_read(const char *bundled_dir, const char *user_dir, struct mr_script_list *out, char *err,
			size_t errlen);
void mr_script_list_free(struct mr_script_list *l);

#endif
