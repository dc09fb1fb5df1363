/* agent_stats.h - the agent's own metrics: per-stream event counts (received,
 * delivered, dropped and why), batch latency, scripts (their state and
 * memory) and reload state, and the /healthz text. */
#ifndef MR_AGENT_AGENT_STATS_H
#define MR_AGENT_AGENT_STATS_H

#include <stdint.h>

#include "agent/agent_net_stats.h"
#include "api_test.h"

struct mr_script_set;

struct mr_stream_series {
	int enabled; /* the data plane runs this stream */
	int32_t received, delivered, dropped_queue, dropped_kernel, queued, batch_seconds;
	struct mr_data_plane_stream_stats last; /* what the counters already include */
};

struct mr_agent_stats {
	mr_metrics *metrics;
	struct mr_stream_series streams[MR_STREAM_COUNT];
	struct mr_net_series net;
	int32_t scripts_active, scripts_disabled, scripts_disabled_now;
	int32_t *memory_series; /* the per-script memory gauges set by the last sync */
	size_t nmemory_series;
};

int mr_agent_stats_init(struct mr_agent_stats *st, mr_metrics *m, const mr_data_plane *dp,
			const char *const names[MR_STREAM_COUNT]);
/* How long the scripts took to handle one batch. */
void mr_agent_stats_batch(struct mr_agent_stats *st, uint32_t stream, uint64_t ns);
/* Brings the counters up to date and sets the health text. */
void mr_agent_stats_sync(struct mr_agent_stats *st, mr_data_plane *dp, const struct mr_script_set *h,
			 mr_http *http);
void mr_agent_stats_free(struct mr_agent_stats *st);

#endif
