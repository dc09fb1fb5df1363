/* agent_net_stats.h - the network tracer's kernel-side counters (records
 * sent, lost, cut short; connections not tracked) and the connections it
 * follows, as the agent's metrics. */
#ifndef MR_AGENT_AGENT_NET_STATS_H
#define MR_AGENT_AGENT_NET_STATS_H

#include <stdint.h>

#include "api_test.h"

#define MR_NET_SERIES 10

struct mr_net_series {
	int enabled; /* the data plane runs the network tracer */
	int32_t ids[MR_NET_SERIES];
	int32_t connections;         /* the gauge of the kernel's connection map */
	struct mr_net_counters last; /* what the counters already include */
};

/* 0, or the negative errno of a series that cannot be made (out of memory). */
int mr_agent_net_stats_init(struct mr_net_series *s, mr_metrics *m, const mr_data_plane *dp);
void mr_agent_net_stats_sync(struct mr_net_series *s, mr_metrics *m, mr_data_plane *dp);

#endif
