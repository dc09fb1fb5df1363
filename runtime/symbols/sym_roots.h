/* sym_roots.h - the root directories (host or container) that tracked
 * processes see, each held open once and shared by every process with that
 * root. A process's mapped files are opened through its root when one of its
 * samples needs a name, which may be after it exited: the held directory
 * still leads to the files then, where /proc/PID/root no longer does. */
#ifndef MR_SYMBOLS_SYM_ROOTS_H
#define MR_SYMBOLS_SYM_ROOTS_H

#include <stdint.h>

struct mr_sym_roots;

struct mr_sym_root {
	int fd;        /* O_PATH descriptor of the directory */
	char path[32]; /* "/proc/self/fd/N": the same directory as a path prefix */
	char key[48];  /* "dev:ino" of the directory */
	uint64_t refs;
};

struct mr_sym_roots *mr_sym_roots_new(void);
/* Closes every root, referenced or not. */
void mr_sym_roots_free(struct mr_sym_roots *r);
/* The root of process pid with a reference taken, opened when no tracked
 * process had it yet. 0 or a negative errno (-ENOENT once pid is gone). */
int mr_sym_roots_get(struct mr_sym_roots *r, int32_t pid, struct mr_sym_root **out);
/* Drops a reference; the directory is closed with the last one. */
void mr_sym_roots_put(struct mr_sym_roots *r, struct mr_sym_root *root);
/* How many roots are open. */
uint64_t mr_sym_roots_count(const struct mr_sym_roots *r);

#endif
