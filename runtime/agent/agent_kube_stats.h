/* agent_kube_stats.h - the Kubernetes client's status (connected, synced
 * kinds, lists, re-lists, dropped watches, errors, events, objects) as the
 * agent's moonrover_kube_* metrics. */
#ifndef MR_AGENT_AGENT_KUBE_STATS_H
#define MR_AGENT_AGENT_KUBE_STATS_H

#include <stdint.h>

#include "api_test.h"

#define MR_KUBE_COUNTERS 5
#define MR_KUBE_GAUGES 5

struct mr_kube_series {
	struct mr_kube *kube; /* NULL: no series */
	int32_t counters[MR_KUBE_COUNTERS], gauges[MR_KUBE_GAUGES];
	struct mr_kube_status last; /* what the counters already include */
};

/* 0, or the negative errno of a series that cannot be made (out of memory). */
int mr_agent_kube_stats_init(struct mr_kube_series *s, mr_metrics *m, struct mr_kube *kube);
void mr_agent_kube_stats_sync(struct mr_kube_series *s, mr_metrics *m);

#endif
