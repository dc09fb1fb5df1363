/* script_trust.h - whether the user's scripts may run with the agent's
 * privileges (it usually runs as root), as sshd's StrictModes judges its
 * files: the scripts directory, every directory above it and every script
 * file must be owned by root or the agent's user and writable by no one
 * else. A directory above may be writable by others if it is sticky (/tmp).
 * --allow-unsafe-scripts turns the checks off. */
#ifndef MR_SCRIPT_HOST_SCRIPT_TRUST_H
#define MR_SCRIPT_HOST_SCRIPT_TRUST_H

#include <stddef.h>

/* Checks dir and every directory above it. 0, or -EPERM (or the error of
 * reaching it) with the reason in err. */
int mr_script_trust_dir(const char *dir, char *err, size_t errlen);
/* Checks the file open as fd (read from path) and the directories between
 * dir, checked already, and it. 0, or -EPERM with the reason in err. */
int mr_script_trust_file(int fd, const char *path, const char *dir, char *err, size_t errlen);

#endif
