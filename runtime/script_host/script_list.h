/* script_list.h - which scripts the agent runs: every *.lua file of the
 * bundled scripts directory (but those the agent skips) and of the user's
 * (a directory only root or the agent's user may write), the user's
 * replacing a bundled one of the same name, in name order. */
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

struct mr_script_dirs {
	const char *bundled;
	const char *bundled_skip; /* bundled scripts not to run: names separated by ',', or NULL */
	const char *user;         /* or NULL */
	int user_unchecked;       /* do not check the user's directory (see script_trust.h) */
};

/* Returns 0, or a negative errno with the reason in err. */
int mr_script_list_read(const struct mr_script_dirs *dirs, struct mr_script_list *out, char *err,
			size_t errlen);
void mr_script_list_free(struct mr_script_list *l);

#endif
