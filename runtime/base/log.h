/* log.h - messages: the agent's log (one line per message on standard error,
 * with time, level and source: "agent", a script's name) and the one-line
 * error messages that fallible functions hand back to their callers. */
#ifndef MR_BASE_LOG_H
#define MR_BASE_LOG_H

#include <stddef.h>

enum { MR_LEVEL_DEBUG = 0, MR_LEVEL_INFO = 1, MR_LEVEL_WARN = 2, MR_LEVEL_ERROR = 3 };

/* Messages below level are dropped (process-wide, set once at start). */
void mr_log_set_level(int level);
int mr_log_enabled(int level);
void mr_log(int level, const char *source, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Writes the message into err (when the caller gave room for one: hot paths
 * pass NULL and 0 and pay nothing) and returns rc, a negative errno, so that
 * a failing path reads `return mr_error(err, errlen, -ENOENT, "...", ...);`. */
int mr_error(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* For a function that returns a pointer, NULL on failure: sets errno to the
 * failure's code (rc, a negative errno, as -rc) and returns NULL, last thing
 * after the cleanup, so that a caller passes the code up as `return -errno`. */
void *mr_fail_null(int rc);

#endif
