/* agent_stats.c - copies the data plane's counters into the metrics registry
 * as deltas (counters only go up) and describes the agent on /healthz. */
#include <stdio.h>
#include <string.h>

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
	return s->received < 0 || s->delivered < 0 || s->dropped_queue < 0 || s->dropped_kernel < 0 ||
			       s->queued < 0 || s->batch_seconds < 0
		       ? -1
		       : 0;
}

int mr_agent_stats_init(struct mr_agent_stats *st, mr_metrics *m, const mr_data_plane *dp,
			const char *const names[MR_STREAM_COUNT])
{
	memset(st, 0, sizeof(*st));
	st->metrics = m;
	for (uint32_t i = 0; i < MR_STREAM_COUNT; i++) {
		st->streams[i].enabled = mr_data_plane_storage(dp, i) != NULL;
		if (st->streams[i].enabled && init_stream(&st->streams[i], m, names[i]) != 0)
			return -1;
	}
	st->scripts_active = series(m, MR_GAUGE, "moonrover_scripts", "Scripts by state", "state=\"active\"");
	st->scripts_disabled = series(m, MR_GAUGE, "moonrover_scripts", NULL, "state=\"disabled\"");
	return st->scripts_active < 0 || st->scripts_disabled < 0 ? -1 : 0;
}

void mr_agent_stats_batch(struct mr_agent_stats *st, uint32_t stream, double seconds)
{
	if (st->streams[stream].enabled)
		mr_metrics_observe(st->metrics, st->streams[stream].batch_seconds, seconds);
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

static void set_health(const struct mr_script_set *h, mr_http *http, size_t active, size_t disabled)
{
	char text[1024];

	if (!http)
		return;
	snprintf(text, sizeof(text), "%s\nscripts: %zu active, %zu disabled\nlast reload: %s%s\n",
		 mr_agent_health_status(), active, disabled,
		 h->last_reload_ok ? "ok" : "failed: ", h->last_reload_ok ? "" : h->last_error);
	mr_http_set_health(http, 1, text);
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
	for (size_t i = 0; i < h->nscripts; i++)
		disabled += h->scripts[i]->disabled != 0;
	mr_metrics_set(st->metrics, st->scripts_active, (double)(h->nscripts - disabled));
	mr_metrics_set(st->metrics, st->scripts_disabled, (double)disabled);
	set_health(h, http, h->nscripts - disabled, disabled);
}
