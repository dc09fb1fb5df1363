/* script_set.c - the running set of scripts. A reload is all or nothing: each new
 * version first runs in a throwaway canary state on copies of recent events;
 * only if every script passes are the old versions asked for their state,
 * the new ones loaded with it, and the sets swapped, between two batches. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "script_host/script_set.h"
#include "entry.h"
#include "base/log.h"
#include "metrics/metrics_mark.h"
#include "script_host/script.h"
#include "script_host/script_list.h"

#define DEFAULT_MEMORY_MIB 128

/* require() looks in the user's directory, then the bundled scripts, then
 * the bundled modules (and the build's generated ones, in a build tree): a
 * user module replaces a bundled one of that name. */
static char *join_path(const struct mr_agent_opts *o)
{
	const char *user = o->user_dir ? o->user_dir : "";
	const char *gen = mr_cli_generated_dir() ? mr_cli_generated_dir() : "";
	size_t len = strlen(user) + strlen(o->scripts_dir) + 2 * strlen(o->lua_dir) + strlen(gen) + 64;
	char *p = malloc(len);

	if (!p)
		return NULL;
	snprintf(p, len, "%s%s%s/?.lua;%s/?.lua;%s/?/init.lua%s%s%s", user, *user ? "/?.lua;" : "",
		 o->scripts_dir, o->lua_dir, o->lua_dir, *gen ? ";" : "", gen, *gen ? "/?.lua" : "");
	return p;
}

struct mr_script_set *mr_script_set_new(struct event_base *base, mr_metrics *metrics, mr_data_plane *dp,
					const struct mr_agent_opts *o)
{
	struct mr_script_set *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->base = base;
	h->metrics = metrics;
	h->dp = dp;
	h->budget_ms = o->budget_ms ? o->budget_ms : 500;
	h->memory_limit = (size_t)(o->script_memory_mib ? o->script_memory_mib : DEFAULT_MEMORY_MIB) << 20;
	h->strict = o->strict != 0;
	h->unsafe_scripts = o->unsafe_scripts != 0;
	h->package_path = join_path(o);
	h->scripts_dir = strdup(o->scripts_dir);
	h->bundled_skip = o->bundled_skip ? strdup(o->bundled_skip) : NULL;
	h->user_dir = o->user_dir ? strdup(o->user_dir) : NULL;
	if (o->config_name && o->config_text) {
		h->config_name = strdup(o->config_name);
		h->config_text = strdup(o->config_text);
	}
	if (!h->package_path || !h->scripts_dir || (o->user_dir && !h->user_dir) ||
	    (o->bundled_skip && !h->bundled_skip) ||
	    (o->config_name && o->config_text && (!h->config_name || !h->config_text))) {
		mr_script_set_free(h);
		return NULL;
	}
	/* There from the start: a canary abandoned counts here, and a series
	 * made during a canary would go with its rollback. */
	mr_script_set_count_abandoned(h, 0);
	return h;
}

static void free_set(struct mr_script **set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mr_script_free(set[i]);
	free(set);
}

void mr_script_set_free(struct mr_script_set *h)
{
	if (!h)
		return;
	free_set(h->scripts, h->nscripts);
	free(h->package_path);
	free(h->scripts_dir);
	free(h->bundled_skip);
	free(h->user_dir);
	free(h->config_name);
	free(h->config_text);
	free(h);
}

void mr_script_set_count(struct mr_script_set *h, const char *metric, const char *help, const char *script,
			 double v)
{
	char labels[256], err[128];
	int32_t id;

	if (script)
		snprintf(labels, sizeof(labels), "script=\"%s\"", script);
	else
		labels[0] = '\0';
	id = mr_metrics_series(h->metrics, MR_COUNTER, metric, help, labels, err, sizeof(err));
	if (id >= 0)
		mr_metrics_add(h->metrics, id, v);
}

void mr_script_set_count_abandoned(struct mr_script_set *h, double v)
{
	mr_script_set_count(h, "moonrover_lua_states_abandoned_total",
			    "Lua states left by a jump out of a stopped call (freed without their finalizers)",
			    NULL, v);
}

/* A canary batch: copies of the stream's recent events, or one made-up
 * event when none arrived yet. */
static uint32_t canary_batch(struct mr_script_set *h, uint32_t stream, void *out)
{
	struct mr_script_recent *r = &h->recent[stream];
	struct mr_process_event *ev = out;

	if (r->count > 0) {
		for (uint32_t i = 0; i < r->count; i++)
			memcpy((unsigned char *)out + (size_t)i * r->size, r->records[i], r->size);
		return r->count;
	}
	memset(ev, 0, sizeof(*ev));
	ev->kind = MR_PROCESS_EXEC;
	ev->pid = (uint32_t)getpid();
	ev->ts_ns = ev->start_ns = mr_sys_monotonic_ns();
	snprintf(ev->comm, sizeof(ev->comm), "moonrover");
	return stream == MR_STREAM_PROCESS ? 1 : 0;
}

/* Runs the new version of a script in a throwaway state on a canary batch.
 * Its failure is the reload's: counted apart from the running version's
 * errors, and reported once, by the reload. The series it registered go
 * with it: those a new script asked for would stay on /metrics, at 0, for
 * a reload that was refused. */
static int try_canary(struct mr_script_set *h, const struct mr_script_entry *e, char *err, size_t errlen)
{
	unsigned char records[MR_SCRIPT_RECENT_MAX * MR_SCRIPT_RECORD_MAX];
	struct mr_metrics_mark mark = mr_metrics_mark(h->metrics);
	struct mr_script *s = mr_script_load(h, e->name, e->path, 1, NULL, 0, err, errlen);
	char why[1024];
	int rc = s ? 0 : -errno;

	for (uint32_t stream = 0; s && rc == 0 && stream < MR_STREAM_COUNT; stream++) {
		uint32_t n = canary_batch(h, stream, records);

		if (n > 0 && (s->streams & (1u << stream)))
			rc = mr_script_dispatch(s, stream, records, n, why, sizeof(why));
		if (rc != 0)
			mr_error(err, errlen, rc, "its canary batch failed: %s", why);
	}
	mr_script_free(s);
	mr_metrics_rollback(h->metrics, &mark);
	if (rc != 0)
		mr_script_set_count(h, "moonrover_lua_canary_failures_total",
				    "New script versions refused at a reload (load or canary batch failed)",
				    e->name, 1);
	return rc;
}

static struct mr_script *old_version(struct mr_script_set *h, const char *name)
{
	for (size_t i = 0; i < h->nscripts; i++)
		if (strcmp(h->scripts[i]->name, name) == 0)
			return h->scripts[i];
	return NULL;
}

/* What a running version handed to its successor during a reload. */
struct handover {
	struct mr_script *old;
	char *state;
	size_t len;
};

/* Asks the running version of a script, if any, for its state. */
static void export_old(struct mr_script_set *h, const struct mr_script_entry *e, struct handover *ho)
{
	char err[1024];

	ho->old = old_version(h, e->name);
	if (ho->old && mr_script_export(ho->old, &ho->state, &ho->len, err, sizeof(err)) != 0)
		mr_log(MR_LEVEL_WARN, e->name, "its state could not be handed over: %s", err);
}

/* A refused reload gives every running version back what it exported. */
static void finish_handovers(struct handover *ho, size_t n, int refused)
{
	for (size_t i = 0; i < n; i++) {
		if (refused && ho[i].old)
			mr_script_reclaim(ho[i].old, ho[i].state, ho[i].len);
		free(ho[i].state);
	}
	free(ho);
}

/* Records how the last (re)load went; reloads (not the first load) are counted. */
static void set_result(struct mr_script_set *h, int ok, const char *error, int reload)
{
	char err[128];
	int32_t id;

	h->last_reload_ok = ok;
	h->reloads += reload != 0;
	snprintf(h->last_error, sizeof(h->last_error), "%s", ok ? "" : error);
	id = mr_metrics_series(h->metrics, MR_GAUGE, "moonrover_reload_last_success",
			       "1 if the last script (re)load succeeded, 0 if the previous version kept running",
			       "", err, sizeof(err));
	mr_metrics_set(h->metrics, id, ok);
	id = mr_metrics_series(h->metrics, MR_GAUGE, "moonrover_reload_last_timestamp_seconds",
			       "When the last script (re)load finished (Unix time)", "", err, sizeof(err));
	mr_metrics_set(h->metrics, id, (double)time(NULL));
	if (reload)
		mr_script_set_count(h, ok ? "moonrover_reloads_total" : "moonrover_reload_failures_total",
				    ok ? "Script reloads swapped in"
				       : "Script reloads refused (load or canary error)",
				    NULL, 1);
}

/* Loads every new version with what its predecessor exported. When one
 * fails, those loaded go, and so do the series they registered (the
 * running versions exported before the mark, so none of theirs). */
static int load_all(struct mr_script_set *h, const struct mr_script_list *list, struct mr_script ***out,
		    char *err, size_t errlen)
{
	struct mr_script **set = calloc(list->n ? list->n : 1, sizeof(*set));
	struct handover *ho = calloc(list->n ? list->n : 1, sizeof(*ho));
	struct mr_metrics_mark mark;

	if (!set || !ho) {
		free(set);
		free(ho);
		return mr_error(err, errlen, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < list->n; i++)
		export_old(h, &list->v[i], &ho[i]);
	mark = mr_metrics_mark(h->metrics);
	for (size_t i = 0; i < list->n; i++) {
		set[i] = mr_script_load(h, list->v[i].name, list->v[i].path, 0, ho[i].state, ho[i].len, err,
					errlen);
		if (!set[i]) {
			int rc = -errno;

			free_set(set, i);
			mr_metrics_rollback(h->metrics, &mark);
			finish_handovers(ho, list->n, 1);
			return rc;
		}
	}
	finish_handovers(ho, list->n, 0);
	*out = set;
	return 0;
}

static struct mr_script_dirs dirs_of(const struct mr_script_set *h)
{
	return (struct mr_script_dirs){ .bundled = h->scripts_dir,
					.bundled_skip = h->bundled_skip,
					.user = h->user_dir,
					.user_unchecked = h->unsafe_scripts };
}

int mr_script_set_reload(struct mr_script_set *h)
{
	struct mr_script_dirs dirs = dirs_of(h);
	struct mr_script_list list;
	struct mr_script **set = NULL;
	char err[1024];
	uint64_t t0 = mr_sys_monotonic_ns();
	int rc = mr_script_list_read(&dirs, &list, err, sizeof(err));

	for (size_t i = 0; rc == 0 && i < list.n; i++)
		rc = try_canary(h, &list.v[i], err, sizeof(err));
	if (rc == 0)
		rc = load_all(h, &list, &set, err, sizeof(err));
	if (rc == 0) {
		free_set(h->scripts, h->nscripts);
		h->scripts = set;
		h->nscripts = list.n;
	}
	set_result(h, rc == 0, err, 1);
	if (rc == 0)
		mr_log(MR_LEVEL_INFO, "agent", "loaded %zu script(s) in %.1f ms", list.n,
		       (double)(mr_sys_monotonic_ns() - t0) / 1e6);
	else
		mr_log(MR_LEVEL_ERROR, "agent", "reload refused, the previous scripts keep running: %s", err);
	mr_script_list_free(&list);
	return rc == 0 ? 0 : -1;
}

/* The first line of a message (a load error may carry a traceback). */
static void first_line(char *out, size_t len, const char *msg)
{
	snprintf(out, len, "%.*s", (int)strcspn(msg, "\n"), msg);
}

/* Loads one script at start; one that fails is kept, disabled. Returns 1
 * when it started. */
static int start_one(struct mr_script_set *h, const struct mr_script_entry *e, char *first_error, size_t len)
{
	char err[1024], why[256];
	struct mr_script *s = mr_script_load(h, e->name, e->path, 0, NULL, 0, err, sizeof(err));

	if (s) {
		h->scripts[h->nscripts++] = s;
		return 1;
	}
	mr_log(MR_LEVEL_ERROR, "agent", "script not started: %s", err);
	first_line(why, sizeof(why), err);
	if (!*first_error)
		snprintf(first_error, len, "%s", why);
	s = mr_script_failed(h, e->name, e->path, why);
	if (s)
		h->scripts[h->nscripts++] = s;
	return 0;
}

/* --strict: every script is read and compiled before any runs. Returns how
 * many failed (each one logged), the first one's reason in first_error. */
static size_t compile_all(struct mr_script_set *h, const struct mr_script_list *list, char *first_error,
			  size_t len)
{
	char err[1024];
	size_t failed = 0;

	for (size_t i = 0; i < list->n; i++) {
		if (mr_script_compile(h, list->v[i].name, list->v[i].path, err, sizeof(err)) == 0)
			continue;
		mr_log(MR_LEVEL_ERROR, "agent", "script not started: %s", err);
		if (!*first_error)
			first_line(first_error, len, err);
		failed++;
	}
	return failed;
}

/* What /healthz says of the first start: how many scripts failed, and the
 * first one's reason. */
static void start_result(struct mr_script_set *h, size_t failed, const char *first_error)
{
	char what[512];

	snprintf(what, sizeof(what), "%zu script%s failed: %s", failed, failed == 1 ? "" : "s", first_error);
	set_result(h, failed == 0, what, 0);
}

static int start_all(struct mr_script_set *h, const struct mr_script_list *list, char *err, size_t errlen)
{
	char first_error[256] = "";
	size_t started = 0, failed = h->strict ? compile_all(h, list, first_error, sizeof(first_error)) : 0;

	if (failed > 0) {
		start_result(h, failed, first_error);
		return mr_error(err, errlen, -EINVAL, "--strict: not starting with a broken script: %s",
				first_error);
	}
	h->scripts = calloc(list->n ? list->n : 1, sizeof(*h->scripts));
	if (!h->scripts)
		return mr_error(err, errlen, -ENOMEM, "out of memory for the scripts");
	for (size_t i = 0; i < list->n; i++)
		started += (size_t)start_one(h, &list->v[i], first_error, sizeof(first_error));
	start_result(h, list->n - started, first_error);
	mr_log(MR_LEVEL_INFO, "agent", "started %zu of %zu script(s)", started, list->n);
	if (h->strict && started < list->n)
		return mr_error(err, errlen, -EINVAL, "--strict: not starting with a broken script: %s",
				first_error);
	return 0;
}

int mr_script_set_start(struct mr_script_set *h, char *err, size_t errlen)
{
	struct mr_script_dirs dirs = dirs_of(h);
	struct mr_script_list list;
	int rc = mr_script_list_read(&dirs, &list, err, errlen);

	if (rc != 0) {
		set_result(h, 0, err, 0);
		return rc;
	}
	rc = start_all(h, &list, err, errlen);
	mr_script_list_free(&list);
	return rc;
}

static void remember(struct mr_script_recent *r, const unsigned char *records, uint32_t n, uint32_t size)
{
	uint32_t first = n > MR_SCRIPT_RECENT_MAX ? n - MR_SCRIPT_RECENT_MAX : 0;

	if (size > MR_SCRIPT_RECORD_MAX)
		return;
	for (uint32_t i = first; i < n; i++) {
		memcpy(r->records[r->next], records + (size_t)i * size, size);
		r->next = (r->next + 1) % MR_SCRIPT_RECENT_MAX;
		if (r->count < MR_SCRIPT_RECENT_MAX)
			r->count++;
	}
	r->size = size;
}

int mr_script_set_stop(struct mr_script_set *h)
{
	int any = 0;

	for (size_t i = 0; i < h->nscripts; i++)
		any |= mr_script_stop(h->scripts[i]);
	return any;
}

void mr_script_set_deliver(struct mr_script_set *h, uint32_t stream, const void *records, uint32_t n,
			   uint32_t size)
{
	char err[1024];

	for (size_t i = 0; i < h->nscripts; i++)
		mr_script_dispatch(h->scripts[i], stream, records, n, err, sizeof(err));
	/* Variable-size records are not kept for canaries: a copy cut to fit
	 * would be an exchange's fragment, meaningless to a parser. */
	if (stream < MR_STREAM_COUNT && size > 0)
		remember(&h->recent[stream], records, n, size);
}
