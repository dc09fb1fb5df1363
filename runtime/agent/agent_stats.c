/* agent_stats.c - copies the data plane's counters into the metrics registry
 * as deltas (counters only go up), publishes each script's memory, and
 * describes the agent on /healthz. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/first_error.h"
#include "agent/agent_health.h"
#include "agent/agent_stats.h"
#include "script_host/script_set.h"
#include "script_host/script.h"

static int32_t series(mr_metrics *m, uint32_t type, const char *name, const char *help, const char *labels)
{
	char err[128];

	return mr_metrics_series(m, type, name, help, labels, err, sizeof(err));
}

static int init_stream(struct mr_stream_series *s, mr_metrics *m, const char *name)
{
	char l[96], q[96], k[96];

	snprintf(l, sizeof(l), "stream=\"%s\"", name);
	snprintf(q, sizeof(q), "stream=\"%s\",reason=\"queue_full\"", name);
	snprintf(k, sizeof(k), "stream=\"%s\",reason=\"kernel_ring_full\"", name);
	s->received = series(m, MR_COUNTER, "moonrover_events_received_total", "Events read from the kernel",
			     l);
	s->delivered = series(m, MR_COUNTER, "moonrover_events_delivered_total",
			      "Events handed to the scripts", l);
	s->dropped_queue =
		series(m, MR_COUNTER, "moonrover_events_dropped_total",
		       "Events lost, by reason: the queue in front of Lua or the kernel ring was full", q);
	s->dropped_kernel = series(m, MR_COUNTER, "moonrover_events_dropped_total", NULL, k);
	s->queued = series(m, MR_GAUGE, "moonrover_events_queued", "Events waiting for the scripts", l);
	s->batch_seconds = series(m, MR_HISTOGRAM, "moonrover_batch_seconds",
				  "Time the scripts took to handle one batch", l);
	return MR_FIRST_ERROR(s->received, s->delivered, s->dropped_queue, s->dropped_kernel, s->queued,
			      s->batch_seconds);
}

int mr_agent_stats_init(struct mr_agent_stats *st, mr_metrics *m, const mr_data_plane *dp,
			const char *const names[MR_STREAM_COUNT])
{
	int rc = 0;

	memset(st, 0, sizeof(*st));
	st->metrics = m;
	for (uint32_t i = 0; rc == 0 && i < MR_STREAM_COUNT; i++) {
		st->streams[i].enabled = mr_data_plane_storage(dp, i) != NULL;
		rc = st->streams[i].enabled ? init_stream(&st->streams[i], m, names[i]) : 0;
	}
	rc = rc ?: mr_agent_net_stats_init(&st->net, m, dp);
	if (rc != 0)
		return rc;
	st->scripts_active = series(m, MR_GAUGE, "moonrover_scripts", "Scripts by state", "state=\"active\"");
	st->scripts_disabled = series(m, MR_GAUGE, "moonrover_scripts", NULL, "state=\"disabled\"");
	st->scripts_disabled_now = series(m, MR_GAUGE, "moonrover_scripts_disabled",
					  "Scripts disabled now (/healthz says degraded while any is)", "");
	return MR_FIRST_ERROR(st->scripts_active, st->scripts_disabled, st->scripts_disabled_now);
}

void mr_agent_stats_batch(struct mr_agent_stats *st, uint32_t stream, uint64_t ns)
{
	if (st->streams[stream].enabled)
		mr_metrics_observe_ns(st->metrics, st->streams[stream].batch_seconds, ns);
}

static void sync_stream(struct mr_agent_stats *st, struct mr_stream_series *s,
			const struct mr_data_plane_stream_stats *now)
{
	mr_metrics *m = st->metrics;

	mr_metrics_add(m, s->received, (double)(now->received - s->last.received));
	mr_metrics_add(m, s->delivered, (double)(now->delivered - s->last.delivered));
	mr_metrics_add(m, s->dropped_queue, (double)(now->dropped_queue - s->last.dropped_queue));
	mr_metrics_add(m, s->dropped_kernel, (double)(now->dropped_kernel - s->last.dropped_kernel));
	mr_metrics_set(m, s->queued, (double)now->queued);
	s->last = *now;
}

#define MIB (1024.0 * 1024.0)

/* One line per script: its state, and its memory against its budget. */
static void describe_scripts(FILE *f, const struct mr_script_set *h)
{
	for (size_t i = 0; i < h->nscripts; i++) {
		const struct mr_script *s = h->scripts[i];

		if (s->disabled)
			fprintf(f, "  %s: disabled: %s\n", s->name, s->why);
		else
			fprintf(f, "  %s: active, memory %.1f of %.0f MiB\n", s->name,
				(double)s->memory.used / MIB, (double)s->memory.limit / MIB);
	}
}

static void set_health(const struct mr_script_set *h, mr_http *http, size_t active, size_t disabled)
{
	char *text = NULL, first[512];
	size_t len = 0;
	FILE *f;

	if (!http)
		return;
	f = open_memstream(&text, &len);
	if (!f)
		return; /* out of memory: the last text stays */
	mr_agent_health_line(h, first, sizeof(first));
	fprintf(f, "%s\nscripts: %zu active, %zu disabled\n", first, active, disabled);
	describe_scripts(f, h);
	if (h->reloads == 0)
		fprintf(f, "start: %s\n", h->last_reload_ok ? "ok" : h->last_error);
	else
		fprintf(f, "last reload: %s%s\n",
			h->last_reload_ok ? "ok" : "failed: ", h->last_reload_ok ? "" : h->last_error);
	if (fclose(f) == 0)
		mr_http_set_health(http, 1, text);
	free(text);
}

static int32_t script_series(mr_metrics *m, const char *name, const char *help, const char *script)
{
	char labels[192];

	snprintf(labels, sizeof(labels), "script=\"%s\"", script);
	return series(m, MR_GAUGE, name, help, labels);
}

static int known(const int32_t *ids, size_t n, int32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

/* Sets each script's memory gauges, and those of scripts gone since the
 * last sync (removed by a reload) to 0. */
static void sync_memory(struct mr_agent_stats *st, const struct mr_script_set *h)
{
	int32_t *ids = calloc(2 * h->nscripts + 1, sizeof(*ids));
	size_t n = 0;

	if (!ids)
		return;
	for (size_t i = 0; i < h->nscripts; i++) {
		const struct mr_script *s = h->scripts[i];

		ids[n] = script_series(st->metrics, "moonrover_lua_memory_bytes",
				       "Memory a script's Lua state holds (0 once stopped)", s->name);
		mr_metrics_set(st->metrics, ids[n++], (double)s->memory.used);
		ids[n] = script_series(st->metrics, "moonrover_lua_memory_budget_bytes",
				       "Memory a script's Lua state may hold", s->name);
		mr_metrics_set(st->metrics, ids[n++], (double)s->memory.limit);
	}
	for (size_t i = 0; i < st->nmemory_series; i++)
		if (!known(ids, n, st->memory_series[i]))
			mr_metrics_set(st->metrics, st->memory_series[i], 0);
	free(st->memory_series);
	st->memory_series = ids;
	st->nmemory_series = n;
}

void mr_agent_stats_sync(struct mr_agent_stats *st, mr_data_plane *dp, const struct mr_script_set *h,
			 mr_http *http)
{
	struct mr_data_plane_stream_stats now;
	size_t disabled = 0;

	for (uint32_t i = 0; i < MR_STREAM_COUNT; i++) {
		if (!st->streams[i].enabled)
			continue;
		mr_data_plane_stream_stats(dp, i, &now);
		sync_stream(st, &st->streams[i], &now);
	}
	mr_agent_net_stats_sync(&st->net, st->metrics, dp);
	for (size_t i = 0; i < h->nscripts; i++)
		disabled += h->scripts[i]->disabled != 0;
	mr_metrics_set(st->metrics, st->scripts_active, (double)(h->nscripts - disabled));
	mr_metrics_set(st->metrics, st->scripts_disabled, (double)disabled);
	mr_metrics_set(st->metrics, st->scripts_disabled_now, (double)disabled);
	sync_memory(st, h);
	set_health(h, http, h->nscripts - disabled, disabled);
}

void mr_agent_stats_free(struct mr_agent_stats *st)
{
	free(st->memory_series);
	st->memory_series = NULL;
	st->nmemory_series = 0;
}
