/* script.h - one script of the agent: a Lua file running in its own state,
 * its subscriptions and timers, and how the agent calls into it. */
#ifndef MR_SCRIPT_HOST_SCRIPT_H
#define MR_SCRIPT_HOST_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "api_test.h"
#include "script_host/script_memory.h"

struct event;
struct mr_script_set;

struct mr_script_timer {
	struct mr_script *owner;
	struct event *ev;
	uint32_t id;
	int repeat;
};

struct mr_script {
	char *name; /* file name without .lua */
	char *path;
	struct mr_script_set *set;
	lua_State *L; /* NULL once closed or freed */
	struct mr_script_memory memory;
	int canary;              /* a trial copy: no timers, no metric updates */
	int live;                /* its load finished: it reports its own failures */
	int disabled;            /* stopped or never started: no more calls until a reload */
	int abandoned;           /* a call was interrupted: free its blocks, never close it */
	int depth;               /* calls in progress: its state is freed only at 0 */
	char why[160];           /* why it is disabled */
	unsigned budget_ms;      /* its own time budget; 0: the agent's */
	unsigned call_budget_ms; /* the budget of the call in progress */
	uint32_t streams;        /* bit per subscribed stream */
	int ref_traceback;       /* the message handler of its calls */
	int ref_dispatch;        /* moonrover.agent's entry points, LUA_NOREF when absent */
	int ref_timer;
	int ref_export;
	int ref_stop;
	int ref_reclaim;
	struct mr_script_timer **timers;
	size_t ntimers;
	size_t timers_cap;
	uint64_t errors; /* callback errors, for the rate limit of their log */
	uint64_t errors_suppressed;
	uint64_t last_error_log_ns;
	double disabled_since_ms; /* when it was disabled: wall clock, ms since 1970 */
};

/* Creates the script's state and runs its file under the budget. imported is
 * the state its previous version exported (serialized), or NULL. Returns the
 * script, or NULL with "path:line: message" in err and the failure's code in
 * errno (mr_fail_null). */
struct mr_script *mr_script_load(struct mr_script_set *h, const char *name, const char *path, int canary,
				 const char *imported, size_t imported_len, char *err, size_t errlen);
/* Reads and compiles the script's file without running any of it: 0, or a
 * negative errno with "path:line: message" in err. */
int mr_script_compile(struct mr_script_set *h, const char *name, const char *path, char *err, size_t errlen);
/* A script that could not start, kept disabled (with why) so that the
 * agent's health counts it. NULL when out of memory. */
struct mr_script *mr_script_failed(struct mr_script_set *h, const char *name, const char *path,
				   const char *why);
/* Hands the script a batch of n records of a stream. Returns 0, or a negative
 * errno when the callback failed (logged and counted; the script may now be
 * disabled). */
int mr_script_dispatch(struct mr_script *s, uint32_t stream, const void *records, uint32_t n, char *err,
		       size_t errlen);
/* The time budget of the script's calls, in milliseconds. */
unsigned mr_script_budget(const struct mr_script *s);
/* Gives back the state the script exported for a reload that was then
 * refused (the script goes on running). */
void mr_script_reclaim(struct mr_script *s, const char *state, size_t len);
/* Runs the script's on_stop hooks; returns 1 when it had any. */
int mr_script_stop(struct mr_script *s);
/* Runs the script's timer id (from its timer event). */
void mr_script_fire_timer(struct mr_script *s, uint32_t id);
/* Asks the script for the state to hand its next version: a malloc'd string
 * in *out (NULL when it exports nothing). 0, or a negative errno with the reason in err. */
int mr_script_export(struct mr_script *s, char **out, size_t *len, char *err, size_t errlen);
/* Closes the state and frees everything (an interrupted state's blocks are
 * freed without closing it: its finalizers never run). */
void mr_script_free(struct mr_script *s);

#endif
