/* watchdog.c - interrupts runaway Lua: lua_sethook does not stop JIT-compiled
 * loops, so a per-call POSIX timer sends SIGALRM to the main thread and the
 * handler jumps back to mr_script_watchdog_pcall when Lua code is running, or marks
 * the budget spent so the next mr_script_watchdog_enter jumps. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "script_host/watchdog.h"

/* Global because a signal handler must reach them; main thread only. */
static volatile sig_atomic_t in_lua;
static volatile sig_atomic_t expired;
static volatile sig_atomic_t aborted; /* the call must end (mr_script_watchdog_abort) */
static sigjmp_buf *volatile jump_target;
static timer_t timer;
static int timer_ready;
/* The call in progress: when it started and the budget it runs under. */
static struct timespec call_start;
static unsigned call_budget_ms;

static void on_alarm(int sig)
{
	(void)sig;
	if (!jump_target)
		return;
	if (in_lua) {
		in_lua = 0;
		siglongjmp(*jump_target, 1);
	}
	expired = 1;
}

int mr_script_watchdog_init(void)
{
	struct sigaction sa;
	struct sigevent sev;

	if (timer_ready)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) != 0)
		return -errno;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGALRM;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0)
		return -errno;
	timer_ready = 1;
	return 0;
}

void mr_script_watchdog_shutdown(void)
{
	if (!timer_ready)
		return;
	timer_delete(timer);
	timer_ready = 0;
}

/* Keeps firing every RETRY_NS after the budget until disarmed, so a signal
 * that lands while the runtime has control is followed by another. */
#define RETRY_NS 10000000L

/* Fires ms after the call's start (an absolute time, so that extending a
 * call's budget counts from its start). */
static void arm(unsigned ms)
{
	struct itimerspec its;
	long nsec = call_start.tv_nsec + (long)(ms % 1000) * 1000000L;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = call_start.tv_sec + ms / 1000 + nsec / 1000000000L;
	its.it_value.tv_nsec = nsec % 1000000000L;
	its.it_interval.tv_nsec = RETRY_NS;
	if (timer_ready)
		timer_settime(timer, TIMER_ABSTIME, &its, NULL);
}

static void disarm(void)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	if (timer_ready)
		timer_settime(timer, 0, &its, NULL);
}

int mr_script_watchdog_pcall(lua_State *L, int nargs, int nresults, int errfunc, unsigned budget_ms)
{
	sigjmp_buf here;
	int rc;

	if (sigsetjmp(here, 1)) {
		disarm();
		jump_target = NULL;
		expired = aborted = 0;
		return -1;
	}
	expired = aborted = 0;
	clock_gettime(CLOCK_MONOTONIC, &call_start);
	call_budget_ms = budget_ms;
	jump_target = &here;
	in_lua = 1;
	arm(budget_ms);
	rc = lua_pcall(L, nargs, nresults, errfunc);
	in_lua = 0;
	disarm();
	jump_target = NULL;
	return rc;
}

static long long elapsed_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long long)(now.tv_sec - call_start.tv_sec) * 1000 +
	       (now.tv_nsec - call_start.tv_nsec) / 1000000;
}

void mr_script_watchdog_extend(unsigned budget_ms)
{
	if (!jump_target || budget_ms <= call_budget_ms)
		return;
	call_budget_ms = budget_ms;
	arm(budget_ms);
	/* A signal of the old deadline was delivered by now (it is aimed at
	 * this thread): forget it if the new one is still ahead. */
	if (elapsed_ms() < (long long)budget_ms)
		expired = 0;
}

void mr_script_watchdog_leave(void)
{
	in_lua = 0;
}

void mr_script_watchdog_enter(void)
{
	if (!jump_target)
		return;
	in_lua = 1;
	if (expired || aborted) {
		in_lua = 0;
		siglongjmp(*jump_target, 1);
	}
}

int mr_script_watchdog_hold(void)
{
	int held = in_lua;

	in_lua = 0;
	return held;
}

void mr_script_watchdog_resume(int held)
{
	if (held)
		mr_script_watchdog_enter();
}

int mr_script_watchdog_abort(int held)
{
	if (!jump_target)
		return 0;
	aborted = 1;
	if (held)
		siglongjmp(*jump_target, 1);
	return 1;
}
