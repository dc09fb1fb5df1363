/* log.h - the agent's log: one line per message on standard error, with
 * time, level and source ("agent", a script's name). */
#ifndef MR_LOG_H
#define MR_LOG_H

enum { MR_LEVEL_DEBUG = 0, MR_LEVEL_INFO = 1, MR_LEVEL_WARN = 2, MR_LEVEL_ERROR = 3 };

/* Messages below level are dropped (process-wide, set once at start). */
void mr_log_set_level(int level);
int mr_log_enabled(int level);
void mr_log(int level, const char *source, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
