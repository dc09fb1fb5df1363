/* transport_connectivity.c - watches the channel's connectivity state on the
 * completion queue and logs when the backend becomes reachable or stops
 * being so: "connected to ADDR" on READY, "cannot reach ADDR: ..." on
 * TRANSIENT_FAILURE, each once per change (not on every retry while down).
 *
 * The channel connects at open and, whenever it falls back to IDLE (the
 * backend closed the connection, or the idle timer fired), is asked to
 * connect again, so gRPC's own backoff keeps retrying while the backend is
 * away and a call finds the channel ready when it is back. */
#include "base/log.h"
#include "transport/transport_internal.h"

static void log_change(struct mr_transport *t, grpc_connectivity_state state)
{
	if (state == GRPC_CHANNEL_READY && t->reachable != 1) {
		t->reachable = 1;
		mr_log(MR_LEVEL_INFO, MR_TRANSPORT_LOG, "connected to %s", t->address);
	} else if (state == GRPC_CHANNEL_TRANSIENT_FAILURE && t->reachable != 0) {
		t->reachable = 0;
		mr_log(MR_LEVEL_WARN, MR_TRANSPORT_LOG,
		       "cannot reach %s: transient failure (reconnecting with backoff)", t->address);
	}
}

/* Watches for a change from the current state; the caller holds the lock
 * (or no other thread runs yet) and the transport is not closing. */
static void watch(struct mr_transport *t)
{
	grpc_connectivity_state state = grpc_channel_check_connectivity_state(t->channel, 1);

	log_change(t, state);
	grpc_channel_watch_connectivity_state(t->channel, state, gpr_inf_future(GPR_CLOCK_MONOTONIC), t->cq,
					      &t->watch_tag);
}

void mr_transport_watch_start(struct mr_transport *t)
{
	watch(t);
}

void mr_transport_watch_fired(struct mr_transport *t)
{
	/* Once closing, the channel may be destroyed already: leave it be. */
	pthread_mutex_lock(&t->lock);
	if (!t->closing)
		watch(t);
	pthread_mutex_unlock(&t->lock);
}
