/* watchdog.c - interrupts runaway Lua: lua_sethook does not stop JIT-compiled
 * loops, so per-call POSIX timers send SIGALRM to the main thread and the
 * handler jumps back to mr_script_watchdog_pcall when Lua code is running, or marks
 * the budget spent so the next mr_script_watchdog_enter jumps.
 *
 * The budget is the main thread's CPU time: on a busy host (the traced
 * servers and their clients taking every core) a call can wait for a CPU
 * for longer than its budget while doing little, and a budget in elapsed
 * time disabled scripts for the host's load, not their own. A second timer
 * in elapsed time, at WALL_FACTOR budgets, still ends a call blocked in a
 * system call (which takes no CPU). */
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
static timer_t cpu_timer;  /* the main thread's CPU time */
static timer_t wall_timer; /* elapsed time */
static int timer_ready;
/* The call in progress: when it started, on both clocks, and its budget. */
static struct timespec call_start_cpu;
static struct timespec call_start_wall;
static unsigned call_budget_ms;

/* The elapsed time a call may take, in budgets. */
#define WALL_FACTOR 10

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
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &cpu_timer) != 0)
		return -errno;
	if (timer_create(CLOCK_MONOTONIC, &sev, &wall_timer) != 0) {
		int e = -errno;

		timer_delete(cpu_timer);
		return e;
	}
	timer_ready = 1;
	return 0;
}

void mr_script_watchdog_shutdown(void)
{
	if (!timer_ready)
		return;
	timer_delete(cpu_timer);
	timer_delete(wall_timer);
	timer_ready = 0;
}

/* Keeps firing every RETRY_NS after the budget until disarmed, so a signal
 * that lands while the runtime has control is followed by another. */
#define RETRY_NS 10000000L

/* Sets t to fire ms after start (an absolute time, so that extending a
 * call's budget counts from its start). */
static void arm_at(timer_t t, const struct timespec *start, unsigned long long ms)
{
	struct itimerspec its;
	long nsec = start->tv_nsec + (long)(ms % 1000) * 1000000L;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = start->tv_sec + (time_t)(ms / 1000) + nsec / 1000000000L;
	its.it_value.tv_nsec = nsec % 1000000000L;
	its.it_interval.tv_nsec = RETRY_NS;
	timer_settime(t, TIMER_ABSTIME, &its, NULL);
}

/* Fires ms of CPU time, or WALL_FACTOR times ms of elapsed time, after the
 * call's start. */
static void arm(unsigned ms)
{
	if (!timer_ready)
		return;
	arm_at(cpu_timer, &call_start_cpu, ms);
	arm_at(wall_timer, &call_start_wall, (unsigned long long)ms * WALL_FACTOR);
}

static void disarm(void)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	if (!timer_ready)
		return;
	timer_settime(cpu_timer, 0, &its, NULL);
	timer_settime(wall_timer, 0, &its, NULL);
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
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &call_start_cpu);
	clock_gettime(CLOCK_MONOTONIC, &call_start_wall);
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

static long long since_ms(clockid_t clock, const struct timespec *start)
{
	struct timespec now;

	clock_gettime(clock, &now);
	return (long long)(now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

void mr_script_watchdog_extend(unsigned budget_ms)
{
	if (!jump_target || budget_ms <= call_budget_ms)
		return;
	call_budget_ms = budget_ms;
	arm(budget_ms);
	/* A signal of the old deadline was delivered by now (it is aimed at
	 * this thread): forget it if the new one is still ahead. */
	if (since_ms(CLOCK_THREAD_CPUTIME_ID, &call_start_cpu) < (long long)budget_ms &&
	    since_ms(CLOCK_MONOTONIC, &call_start_wall) < (long long)budget_ms * WALL_FACTOR)
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
