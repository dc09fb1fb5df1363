/* thread.h - the runtime's worker threads (data plane, transport): named, and
 * with every signal blocked, so that signal handling and the Lua watchdog's
 * SIGALRM stay with the main thread. */
#ifndef MR_BASE_THREAD_H
#define MR_BASE_THREAD_H

#include <pthread.h>

/* Starts fn(arg) on a new thread named name (15 characters at most).
 * Returns 0 or a negative errno; *started tells whether the thread runs
 * (it may run even when naming it failed). */
int mr_thread_start(pthread_t *thread, int *started, const char *name, void *(*fn)(void *), void *arg);

#endif
