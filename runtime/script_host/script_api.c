/* script_api.c - the functions a script's Lua code calls (api.h, "scripts"):
 * subscriptions, timers, log, metrics. Each one hands control back to the
 * runtime for the watchdog (mr_script_watchdog_leave) and returns through
 * mr_script_watchdog_enter, which abandons the call if its budget ran out. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "base/grow_array.h"
#include "base/log.h"
#include "script_host/script_set.h"
#include "script_host/script.h"
#include "script_host/watchdog.h"

void mr_script_call_begin(void)
{
	mr_script_watchdog_leave();
}

void mr_script_call_end(void)
{
	mr_script_watchdog_enter();
}

int mr_script_subscribe(mr_script *s, uint32_t stream, char *err, size_t errlen)
{
	int rc = 0;

	mr_script_watchdog_leave();
	if (stream >= MR_STREAM_COUNT)
		rc = mr_error(err, errlen, -EINVAL, "there is no stream %u", stream);
	else if ((stream == MR_STREAM_TCP || stream == MR_STREAM_NET) &&
		 !mr_data_plane_storage(s->set->dp, stream))
		rc = mr_error(err, errlen, -ENOTCONN,
			      "the network tracer is not running (agent --network off, or the kernel "
			      "cannot: the agent's log says why)");
	else
		s->streams |= 1u << stream;
	mr_script_watchdog_enter();
	return rc;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct mr_script_timer *t = arg;

	(void)fd;
	(void)what;
	mr_script_fire_timer(t->owner, t->id);
}

static struct mr_script_timer *find_timer(mr_script *s, uint32_t id, size_t *index)
{
	for (size_t i = 0; i < s->ntimers; i++) {
		if (s->timers[i]->id == id) {
			*index = i;
			return s->timers[i];
		}
	}
	return NULL;
}

static int add_timer(mr_script *s, uint32_t id, double seconds, int repeat)
{
	struct timeval tv = { .tv_sec = (time_t)seconds,
			      .tv_usec = (suseconds_t)((seconds - floor(seconds)) * 1e6) };
	struct mr_script_timer *t;
	void *grown;

	grown = mr_grow_array(s->timers, &s->timers_cap, s->ntimers + 1, sizeof(*s->timers));
	if (!grown)
		return -ENOMEM;
	s->timers = grown;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->owner = s;
	t->id = id;
	t->repeat = repeat;
	t->ev = event_new(s->set->base, -1, repeat ? EV_PERSIST : 0, on_timer, t);
	if (!t->ev || event_add(t->ev, &tv) != 0) {
		if (t->ev)
			event_free(t->ev);
		free(t);
		return -ENOMEM;
	}
	s->timers[s->ntimers++] = t;
	return 0;
}

int mr_script_timer(mr_script *s, uint32_t id, double seconds, int32_t repeat, char *err, size_t errlen)
{
	size_t unused;
	int rc = 0;

	mr_script_watchdog_leave();
	if (!(seconds >= 0.001 && seconds <= 86400 * 365))
		rc = mr_error(err, errlen, -EINVAL, "a timer's interval is 0.001 s to one year, not %g s",
			      seconds);
	else if (find_timer(s, id, &unused))
		rc = mr_error(err, errlen, -EEXIST, "timer %u is already set", id);
	else if (!s->canary && !s->disabled && add_timer(s, id, seconds, repeat != 0) != 0)
		rc = mr_error(err, errlen, -ENOMEM, "out of memory for a timer");
	mr_script_watchdog_enter();
	return rc;
}

void mr_script_timer_cancel(mr_script *s, uint32_t id)
{
	size_t i;
	struct mr_script_timer *t;

	mr_script_watchdog_leave();
	t = find_timer(s, id, &i);
	if (t) {
		event_free(t->ev);
		free(t);
		s->timers[i] = s->timers[--s->ntimers];
	}
	mr_script_watchdog_enter();
}

/* A larger budget also extends the call in progress (the script's load, when
 * called at its top level), counted from the call's start. */
int mr_script_set_budget(mr_script *s, uint32_t ms, char *err, size_t errlen)
{
	int rc = 0;

	mr_script_watchdog_leave();
	if (ms < 10 || ms > 60000) {
		rc = mr_error(err, errlen, -EINVAL, "a budget is 10 to 60000 ms, not %u", ms);
	} else {
		s->budget_ms = ms;
		if (s->depth > 0 && ms > s->call_budget_ms) {
			s->call_budget_ms = ms;
			mr_script_watchdog_extend(ms);
		}
	}
	mr_script_watchdog_enter();
	return rc;
}

int mr_script_set_memory_budget(mr_script *s, uint32_t mib, char *err, size_t errlen)
{
	int rc = 0;

	mr_script_watchdog_leave();
	if (mib >= 1 && mib <= 65536)
		s->memory.limit = (size_t)mib << 20;
	else
		rc = mr_error(err, errlen, -EINVAL, "a memory budget is 1 to 65536 MiB, not %u", mib);
	mr_script_watchdog_enter();
	return rc;
}

uint64_t mr_script_memory_budget(mr_script *s)
{
	return s->memory.limit;
}

void mr_script_log(mr_script *s, int32_t level, const char *msg)
{
	mr_script_watchdog_leave();
	if (s->canary)
		mr_log(level, s->name, "(canary) %s", msg);
	else
		mr_log(level, s->name, "%s", msg);
	mr_script_watchdog_enter();
}

int32_t mr_script_metric(mr_script *s, uint32_t type, const char *name, const char *help, const char *labels,
			 char *err, size_t errlen)
{
	int32_t id;

	mr_script_watchdog_leave();
	/* A canary's help text would outlive a refused reload. */
	id = mr_metrics_series(s->set->metrics, type, name, s->canary ? NULL : help, labels, err, errlen);
	mr_script_watchdog_enter();
	return id;
}

int32_t mr_script_histogram(mr_script *s, const char *name, const char *help, const char *labels,
			    const double *bounds, uint32_t nbounds, char *err, size_t errlen)
{
	int32_t id;

	mr_script_watchdog_leave();
	id = mr_metrics_histogram(s->set->metrics, name, s->canary ? NULL : help, labels, bounds, nbounds,
				  err, errlen);
	mr_script_watchdog_enter();
	return id;
}

void mr_script_metric_add(mr_script *s, int32_t series, double v)
{
	mr_script_watchdog_leave();
	if (!s->canary)
		mr_metrics_add(s->set->metrics, series, v);
	mr_script_watchdog_enter();
}

int mr_script_net_verdict(mr_script *s, uint64_t conn, uint32_t verdict, char *err, size_t errlen)
{
	int rc = 0;

	mr_script_watchdog_leave();
	if (!s->canary)
		rc = mr_data_plane_net_verdict(s->set->dp, conn, verdict, err, errlen);
	mr_script_watchdog_enter();
	return rc;
}

int mr_script_net_capture(mr_script *s, uint64_t conn, uint32_t direction, uint64_t skip_to, char *err,
			  size_t errlen)
{
	int rc = 0;

	mr_script_watchdog_leave();
	if (!s->canary)
		rc = mr_data_plane_net_capture(s->set->dp, conn, direction, skip_to, err, errlen);
	mr_script_watchdog_enter();
	return rc;
}

int mr_script_net_conn_open(mr_script *s, uint64_t conn)
{
	int rc;

	mr_script_watchdog_leave();
	rc = mr_data_plane_net_conn_open(s->set->dp, conn);
	mr_script_watchdog_enter();
	return rc;
}

void mr_script_metric_set(mr_script *s, int32_t series, double v)
{
	mr_script_watchdog_leave();
	if (!s->canary)
		mr_metrics_set(s->set->metrics, series, v);
	mr_script_watchdog_enter();
}

void mr_script_metric_observe(mr_script *s, int32_t series, double v)
{
	mr_script_watchdog_leave();
	if (!s->canary)
		mr_metrics_observe(s->set->metrics, series, v);
	mr_script_watchdog_enter();
}
