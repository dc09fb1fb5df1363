/* agent_kube_stats.c - copies the Kubernetes client's status into the
 * metrics registry: its counters as deltas, its state as gauges. One row
 * per series: the status field it comes from, and its name. */
#include <stddef.h>
#include <string.h>

#include "agent/agent_kube_stats.h"
#include "base/first_error.h"

struct kube_row {
	size_t offset;
	const char *name, *help, *labels;
};

static const struct kube_row COUNTERS[MR_KUBE_COUNTERS] = {
	{ offsetof(struct mr_kube_status, lists), "moonrover_kube_lists_total",
	  "Full lists of a kind (every page) the Kubernetes client received", "" },
	{ offsetof(struct mr_kube_status, relists_gone), "moonrover_kube_relists_gone_total",
	  "Lists made again because the API server had compacted the version watched (410 Gone)", "" },
	{ offsetof(struct mr_kube_status, watch_drops), "moonrover_kube_watch_drops_total",
	  "Watches the API server or the network ended (each one resumed)", "" },
	{ offsetof(struct mr_kube_status, errors), "moonrover_kube_errors_total",
	  "Failed requests to the Kubernetes API server and token file reads", "" },
	{ offsetof(struct mr_kube_status, events), "moonrover_kube_events_total",
	  "Watch events (added, modified, deleted) the Kubernetes client applied", "" },
};

static uint64_t field(const struct mr_kube_status *s, size_t offset)
{
	uint64_t v;

	memcpy(&v, (const unsigned char *)s + offset, sizeof(v));
	return v;
}

static int32_t series(mr_metrics *m, uint32_t type, const char *name, const char *help, const char *labels)
{
	char err[128];

	return mr_metrics_series(m, type, name, help, labels, err, sizeof(err));
}

int mr_agent_kube_stats_init(struct mr_kube_series *s, mr_metrics *m, struct mr_kube *kube)
{
	int32_t *g = s->gauges;

	memset(s, 0, sizeof(*s));
	if (!kube)
		return 0;
	for (size_t i = 0; i < MR_KUBE_COUNTERS; i++) {
		s->counters[i] = series(m, MR_COUNTER, COUNTERS[i].name, COUNTERS[i].help,
					COUNTERS[i].labels);
		if (s->counters[i] < 0)
			return s->counters[i];
	}
	g[0] = series(m, MR_GAUGE, "moonrover_kube_connected",
		      "1 when the last request to the Kubernetes API server reached it", "");
	g[1] = series(m, MR_GAUGE, "moonrover_kube_synced", "1 once a kind's first full list is in",
		      "kind=\"pod\"");
	g[2] = series(m, MR_GAUGE, "moonrover_kube_synced", NULL, "kind=\"service\"");
	g[3] = series(m, MR_GAUGE, "moonrover_kube_objects", "Objects the Kubernetes client keeps",
		      "kind=\"pod\"");
	g[4] = series(m, MR_GAUGE, "moonrover_kube_objects", NULL, "kind=\"service\"");
	s->kube = kube;
	return MR_FIRST_ERROR(g[0], g[1], g[2], g[3], g[4]);
}

void mr_agent_kube_stats_sync(struct mr_kube_series *s, mr_metrics *m)
{
	struct mr_kube_status now;

	if (!s->kube)
		return;
	mr_kube_status(s->kube, &now);
	for (size_t i = 0; i < MR_KUBE_COUNTERS; i++)
		mr_metrics_add(m, s->counters[i],
			       (double)(field(&now, COUNTERS[i].offset) -
					field(&s->last, COUNTERS[i].offset)));
	mr_metrics_set(m, s->gauges[0], now.connected);
	mr_metrics_set(m, s->gauges[1], now.pods_synced);
	mr_metrics_set(m, s->gauges[2], now.services_synced);
	mr_metrics_set(m, s->gauges[3], (double)now.objects_pods);
	mr_metrics_set(m, s->gauges[4], (double)now.objects_services);
	s->last = now;
}
