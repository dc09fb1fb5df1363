/* thread.c - starts a named worker thread that never takes a signal. */
#include <signal.h>

#include "base/thread.h"

int mr_thread_start(pthread_t *thread, int *started, const char *name, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int e;

	*started = 0;
	sigfillset(&all);
	e = pthread_sigmask(SIG_BLOCK, &all, &old);
	if (e == 0) {
		/* The thread inherits the mask: it never takes a signal. */
		int created = pthread_create(thread, NULL, fn, arg);
		int restored = pthread_sigmask(SIG_SETMASK, &old, NULL);

		*started = created == 0;
		e = created ?: restored;
	}
	if (e == 0)
		e = pthread_setname_np(*thread, name);
	return -e;
}
