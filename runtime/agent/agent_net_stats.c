/* agent_net_stats.c - copies the network tracer's kernel counters into the
 * metrics registry as deltas (one row per counter of struct mr_net_counters:
 * where it is, and the series it becomes), and the size of its connection
 * map as a gauge. */
#include <stddef.h>
#include <string.h>

#include "agent/agent_net_stats.h"

struct net_row {
	size_t offset;
	const char *name, *help, *labels;
};

static const struct net_row ROWS[MR_NET_SERIES] = {
	{ offsetof(struct mr_net_counters, data_records), "moonrover_net_records_total",
	  "Socket reads and writes the network tracer recorded", "" },
	{ offsetof(struct mr_net_counters, lost_data), "moonrover_net_records_lost_total",
	  "Socket reads and writes not recorded, by reason", "reason=\"kernel_ring_full\"" },
	{ offsetof(struct mr_net_counters, truncated), "moonrover_net_records_partial_total",
	  "Records whose copy of the bytes is incomplete: cut at the payload limit or the buffer count, "
	  "or not readable at all",
	  "reason=\"truncated\"" },
	{ offsetof(struct mr_net_counters, unreadable), "moonrover_net_records_partial_total", NULL,
	  "reason=\"unreadable\"" },
	{ offsetof(struct mr_net_counters, closed_data), "moonrover_net_records_lost_total", NULL,
	  "reason=\"socket_closed\"" },
	{ offsetof(struct mr_net_counters, skipped_records), "moonrover_net_records_skipped_total",
	  "Socket reads and writes not recorded: wholly inside a body the parser asked not to copy", "" },
	{ offsetof(struct mr_net_counters, skipped_bytes), "moonrover_net_bytes_skipped_total",
	  "Bytes not copied because the parser asked to skip them (bodies it does not need)", "" },
	{ offsetof(struct mr_net_counters, lost_events), "moonrover_net_connection_events_lost_total",
	  "Connection events (connect, accept, close, ...) lost, by reason", "reason=\"kernel_ring_full\"" },
	{ offsetof(struct mr_net_counters, conns_full), "moonrover_net_connections_untracked_total",
	  "Connections not tracked, by reason", "reason=\"map_full\"" },
	{ offsetof(struct mr_net_counters, found_midstream),
	  "moonrover_net_connections_found_midstream_total",
	  "Connections first seen after they opened (the agent started later, or their open was lost)", "" },
};

static uint64_t field(const struct mr_net_counters *c, size_t offset)
{
	uint64_t v;

	memcpy(&v, (const unsigned char *)c + offset, sizeof(v));
	return v;
}

int mr_agent_net_stats_init(struct mr_net_series *s, mr_metrics *m, const mr_data_plane *dp)
{
	char err[128];

	memset(s, 0, sizeof(*s));
	s->enabled = mr_data_plane_storage(dp, MR_STREAM_NET) != NULL;
	for (size_t i = 0; s->enabled && i < MR_NET_SERIES; i++) {
		s->ids[i] = mr_metrics_series(m, MR_COUNTER, ROWS[i].name, ROWS[i].help, ROWS[i].labels, err,
					      sizeof(err));
		if (s->ids[i] < 0)
			return s->ids[i];
	}
	if (!s->enabled)
		return 0;
	s->connections = mr_metrics_series(m, MR_GAUGE, "moonrover_net_kernel_connections",
					   "Connections the kernel side follows (entries of its map)", "",
					   err, sizeof(err));
	return s->connections < 0 ? s->connections : 0;
}

void mr_agent_net_stats_sync(struct mr_net_series *s, mr_metrics *m, mr_data_plane *dp)
{
	struct mr_net_counters now;

	if (!s->enabled)
		return;
	mr_data_plane_net_counters(dp, &now);
	for (size_t i = 0; i < MR_NET_SERIES; i++)
		mr_metrics_add(m, s->ids[i],
			       (double)(field(&now, ROWS[i].offset) - field(&s->last, ROWS[i].offset)));
	s->last = now;
	mr_metrics_set(m, s->connections, (double)mr_data_plane_net_conn_count(dp));
}
