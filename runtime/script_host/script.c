/* script.c - loading a script into its state and calling it: every call runs
 * under the watchdog's budget with a traceback handler; errors are counted and
 * logged at most once per ERROR_LOG_INTERVAL; a call that runs out of budget
 * abandons the state and disables the script until the next reload. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <lauxlib.h>

#include "script_host/script_set.h"
#include "base/log.h"
#include "script_host/script.h"
#include "script_host/script_owner.h"
#include "script_host/script_state.h"
#include "script_host/watchdog.h"

#define ERROR_LOG_INTERVAL_NS 10000000000ull

static void free_timers(struct mr_script *s)
{
	for (size_t i = 0; i < s->ntimers; i++) {
		event_free(s->timers[i]->ev);
		free(s->timers[i]);
	}
	free(s->timers);
	s->timers = NULL;
	s->ntimers = s->timers_cap = 0;
}

/* Frees the state: closed (its finalizers run) after a normal return,
 * freed block by block after a jump out of it. What it opened through the
 * runtime and did not close itself is closed then. */
static void release_state(struct mr_script *s)
{
	if (s->L)
		mr_script_memory_close(&s->memory, s->L, s->abandoned);
	s->L = NULL;
	mr_script_owner_close_all(s);
}

/* Disables the script; its state goes once no call is inside it. */
static void stop(struct mr_script *s, int abandoned, const char *why)
{
	if (!s->disabled)
		s->disabled_since_ms = mr_sys_epoch_ms();
	s->disabled = 1;
	s->abandoned |= abandoned;
	if (why != s->why)
		snprintf(s->why, sizeof(s->why), "%s", why);
	s->streams = 0;
	free_timers(s);
	if (s->depth == 0)
		release_state(s);
}

unsigned mr_script_budget(const struct mr_script *s)
{
	return s->budget_ms ? s->budget_ms : s->set->budget_ms;
}

/* A call ran out of time or memory: the script stops. abandoned: the call
 * was ended by a jump out of the state. Its loader reports a failed load; a
 * running script says so itself. */
static int fail(struct mr_script *s, int abandoned, char *err, size_t errlen)
{
	int memory = s->memory.exceeded, rc;
	char why[128];

	if (memory)
		snprintf(why, sizeof(why), "ran past its memory budget of %zu MiB", s->memory.limit >> 20);
	else
		snprintf(why, sizeof(why), "ran past its time budget of %u ms", s->call_budget_ms);
	rc = mr_error(err, errlen, memory ? -ENOMEM : -ETIME, "%s: %s", s->path, why);
	if (!s->canary && memory)
		mr_script_set_count(s->set, "moonrover_lua_memory_exceeded_total",
				    "Scripts stopped for running past their memory budget", s->name, 1);
	else if (!s->canary)
		mr_script_set_count(s->set, "moonrover_lua_interrupts_total",
				    "Lua callbacks interrupted for running past their time budget", s->name,
				    1);
	if (abandoned)
		mr_script_set_count_abandoned(s->set, 1);
	if (s->live)
		mr_log(MR_LEVEL_ERROR, s->name, "%s: script disabled until the next successful reload", why);
	stop(s, abandoned, why);
	return rc;
}

/* A canary's errors are its reload's: counted and logged there, once. */
static void report_error(struct mr_script *s, const char *msg)
{
	uint64_t now = mr_sys_monotonic_ns();

	if (s->canary)
		return;
	s->errors++;
	mr_script_set_count(s->set, "moonrover_lua_errors_total", "Errors raised by Lua callbacks", s->name,
			    1);
	if (s->last_error_log_ns && now - s->last_error_log_ns < ERROR_LOG_INTERVAL_NS) {
		s->errors_suppressed++;
		return;
	}
	if (s->errors_suppressed)
		mr_log(MR_LEVEL_ERROR, s->name, "%s\n(%llu more errors since the last one logged)", msg,
		       (unsigned long long)s->errors_suppressed);
	else
		mr_log(MR_LEVEL_ERROR, s->name, "%s", msg);
	s->errors_suppressed = 0;
	s->last_error_log_ns = now;
}

/* Calls the function below its nargs arguments on the stack, under the
 * script's time and memory budgets. Returns 0 with nres results left on the
 * stack, or with the message in err -ETIME or -ENOMEM (a budget ran out),
 * -ECANCELED (the script was stopped meanwhile) or -EINVAL (it raised). */
static int call(struct mr_script *s, int nargs, int nres, char *err, size_t errlen)
{
	lua_State *L = s->L;
	int base = lua_gettop(L) - nargs, enforce = s->memory.enforce, rc;
	struct mr_script *caller = mr_script_owner_running();

	lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref_traceback);
	lua_insert(L, base);
	mr_script_owner_set_running(s);
	s->depth++;
	s->call_budget_ms = mr_script_budget(s);
	s->memory.enforce = 1;
	rc = mr_script_watchdog_pcall(L, nargs, nres, base, s->call_budget_ms);
	s->memory.enforce = enforce;
	s->depth--;
	mr_script_owner_set_running(caller);
	if (rc == -1)
		return fail(s, 1, err, errlen);
	if (s->disabled) { /* by a call nested in this one: its state goes now */
		stop(s, 0, s->why);
		return mr_error(err, errlen, -ECANCELED, "%s: %s", s->path, s->why);
	}
	if (rc != 0)
		snprintf(err, errlen, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "unknown error");
	if (rc != 0 || s->memory.exceeded)
		lua_settop(L, base - 1);
	if (s->memory.exceeded)
		return fail(s, 0, err, errlen);
	if (rc != 0)
		return -EINVAL;
	lua_remove(L, base);
	return 0;
}

static const char *const ENTRIES[] = { "_dispatch", "_timer", "_export", "_stop", "_reclaim" };
#define NENTRIES (sizeof(ENTRIES) / sizeof(ENTRIES[0]))

/* Returns moonrover.agent's entry points (nil for each when the script did
 * not use it). Runs as a protected call: a script may have broken package. */
static int entries(lua_State *L)
{
	lua_getglobal(L, "package");
	lua_getfield(L, -1, "loaded");
	lua_getfield(L, -1, "moonrover.agent");
	for (size_t i = 0; i < NENTRIES; i++) {
		if (lua_istable(L, 3))
			lua_getfield(L, 3, ENTRIES[i]);
		else
			lua_pushnil(L);
	}
	return (int)NENTRIES;
}

static int entry_ref(lua_State *L)
{
	if (!lua_isfunction(L, -1)) {
		lua_pop(L, 1);
		return LUA_NOREF;
	}
	return luaL_ref(L, LUA_REGISTRYINDEX);
}

/* Finds moonrover.agent's entry points if the script used it. */
static int find_entries(struct mr_script *s, char *err, size_t errlen)
{
	char why[512];
	int rc;

	lua_pushcfunction(s->L, entries);
	rc = call(s, 0, (int)NENTRIES, why, sizeof(why));
	if (rc != 0)
		return mr_error(err, errlen, rc, "%s: its package table is unusable: %s", s->path, why);
	s->ref_reclaim = entry_ref(s->L);
	s->ref_stop = entry_ref(s->L);
	s->ref_export = entry_ref(s->L);
	s->ref_timer = entry_ref(s->L);
	s->ref_dispatch = entry_ref(s->L);
	return 0;
}

static struct mr_script *script_new(struct mr_script_set *h, const char *name, const char *path, int canary)
{
	struct mr_script *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->set = h;
	s->canary = canary;
	s->name = strdup(name);
	s->path = strdup(path);
	s->ref_traceback = s->ref_dispatch = s->ref_timer = s->ref_export = s->ref_stop = s->ref_reclaim =
		LUA_NOREF;
	if (!s->name || !s->path) {
		mr_script_free(s);
		return NULL;
	}
	return s;
}

struct mr_script *mr_script_load(struct mr_script_set *h, const char *name, const char *path, int canary,
				 const char *imported, size_t imported_len, char *err, size_t errlen)
{
	struct mr_script *s = script_new(h, name, path, canary);
	int rc;

	if (!s || !(s->L = mr_script_state_new(s, h->package_path, imported, imported_len))) {
		mr_error(err, errlen, -ENOMEM, "%s: out of memory", path);
		mr_script_free(s);
		return mr_fail_null(-ENOMEM);
	}
	rc = mr_script_state_load(s, path);
	if (rc != 0) /* lua_load's status: the message is on the stack */
		rc = mr_error(err, errlen, rc == LUA_ERRMEM ? -ENOMEM : -EINVAL, "%s",
			      lua_tostring(s->L, -1));
	rc = rc ?: call(s, 0, 0, err, errlen);
	rc = rc ?: find_entries(s, err, errlen);
	if (rc != 0) {
		mr_script_free(s);
		return mr_fail_null(rc);
	}
	s->live = !canary;
	return s;
}

int mr_script_compile(struct mr_script_set *h, const char *name, const char *path, char *err, size_t errlen)
{
	struct mr_script *s = script_new(h, name, path, 1);
	int rc = 0;

	if (!s || !(s->L = mr_script_state_new(s, h->package_path, NULL, 0)))
		rc = mr_error(err, errlen, -ENOMEM, "%s: out of memory", path);
	else if (mr_script_state_load(s, path) != 0)
		rc = mr_error(err, errlen, -EINVAL, "%s", lua_tostring(s->L, -1));
	mr_script_free(s);
	return rc;
}

struct mr_script *mr_script_failed(struct mr_script_set *h, const char *name, const char *path,
				   const char *why)
{
	struct mr_script *s = script_new(h, name, path, 0);

	if (s) {
		s->disabled = 1;
		s->disabled_since_ms = mr_sys_epoch_ms();
		s->memory.limit = h->memory_limit;
		snprintf(s->why, sizeof(s->why), "%s", why);
	}
	return s;
}

static int push_entry(struct mr_script *s, int ref)
{
	if (s->disabled || !s->L || ref == LUA_NOREF)
		return -ENOENT;
	lua_rawgeti(s->L, LUA_REGISTRYINDEX, ref);
	return 0;
}

int mr_script_dispatch(struct mr_script *s, uint32_t stream, const void *records, uint32_t n, char *err,
		       size_t errlen)
{
	int rc;

	if (!(s->streams & (1u << stream)) || push_entry(s, s->ref_dispatch) != 0)
		return 0;
	lua_pushinteger(s->L, (lua_Integer)stream);
	lua_pushnumber(s->L, (lua_Number)(uintptr_t)records);
	lua_pushinteger(s->L, (lua_Integer)n);
	rc = call(s, 3, 0, err, errlen);
	if (rc != 0 && !s->disabled)
		report_error(s, err);
	return rc;
}

/* Called by a timer event (see script_api.c). */
void mr_script_fire_timer(struct mr_script *s, uint32_t id)
{
	char err[1024];

	if (push_entry(s, s->ref_timer) != 0)
		return;
	lua_pushinteger(s->L, (lua_Integer)id);
	if (call(s, 1, 0, err, sizeof(err)) != 0 && !s->disabled)
		report_error(s, err);
}

void mr_script_reclaim(struct mr_script *s, const char *state, size_t len)
{
	char err[1024];

	if (!state || push_entry(s, s->ref_reclaim) != 0)
		return;
	lua_pushlstring(s->L, state, len);
	if (call(s, 1, 0, err, sizeof(err)) != 0 && !s->disabled)
		report_error(s, err);
}

int mr_script_stop(struct mr_script *s)
{
	char err[1024];
	int hooks;

	if (push_entry(s, s->ref_stop) != 0)
		return 0;
	if (call(s, 0, 1, err, sizeof(err)) != 0) {
		if (!s->disabled)
			report_error(s, err);
		return 0;
	}
	hooks = (int)lua_tointeger(s->L, -1);
	lua_pop(s->L, 1);
	return hooks > 0;
}

int mr_script_export(struct mr_script *s, char **out, size_t *len, char *err, size_t errlen)
{
	const char *text;
	int rc;

	*out = NULL;
	*len = 0;
	if (push_entry(s, s->ref_export) != 0)
		return 0;
	rc = call(s, 0, 1, err, errlen);
	if (rc != 0)
		return rc;
	text = lua_tolstring(s->L, -1, len);
	if (text && !(*out = malloc(*len + 1))) {
		lua_pop(s->L, 1);
		return mr_error(err, errlen, -ENOMEM, "out of memory");
	}
	if (text)
		memcpy(*out, text, *len + 1);
	lua_pop(s->L, 1);
	return 0;
}

void mr_script_free(struct mr_script *s)
{
	if (!s)
		return;
	/* Finalizers run by lua_close may still cancel or add timers. */
	release_state(s);
	free_timers(s);
	free(s->name);
	free(s->path);
	free(s);
}
