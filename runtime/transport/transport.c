/* transport.c - the transport's life cycle: options, the channel, the
 * completion queue and its thread (open), statistics, and tear-down (close).
 * Calls are in transport_call.c, the thread in transport_thread.c.
 *
 * Failing fast: calls go out without GRPC_INITIAL_METADATA_WAIT_FOR_READY,
 * so while the backend is unreachable they end at once with UNAVAILABLE
 * instead of waiting for their deadline. The channel keeps reconnecting on
 * its own with backoff (see transport_connectivity.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <grpc/grpc_security.h>
#include <grpc/support/log.h>

#include "base/host_port.h"
#include "base/log.h"
#include "script_host/script_owner.h"
#include "transport/transport_internal.h"

#define DEFAULT_QUEUE_BYTES (64u << 20)
#define MAX_RECONNECT_BACKOFF_MS 10000
#define USER_AGENT "moonrover/" MR_VERSION

/* "host:port", as gRPC targets go, with a port from 1 to 65535. */
static int valid_address(const char *address)
{
	char host[256];
	uint16_t port;

	return mr_host_port_parse(address, host, sizeof(host), &port) == 0 && port > 0;
}

static int check_opts(const struct mr_transport_opts *o, char *err, size_t errlen)
{
	if (!o) {
		snprintf(err, errlen, "invalid transport options: none given");
		return -EINVAL;
	}
	if (!valid_address(o->address)) {
		snprintf(err, errlen, "invalid transport address \"%s\": expected host:port",
			 o->address ? o->address : "");
		return -EINVAL;
	}
	return 0;
}

static struct mr_transport *new_transport(const struct mr_transport_opts *o)
{
	struct mr_transport *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->address = strdup(o->address);
	if (!t->address || pthread_mutex_init(&t->lock, NULL) != 0) {
		free(t->address);
		free(t);
		return NULL;
	}
	t->queue_bytes = o->queue_bytes ? o->queue_bytes : DEFAULT_QUEUE_BYTES;
	t->notify_fd = -1;
	t->reachable = -1;
	t->next_id = 1;
	t->watch_tag.kind = MR_TX_WATCH;
	return t;
}

static grpc_channel *make_channel(const struct mr_transport_opts *o, char *err, size_t errlen)
{
	grpc_arg args[] = {
		{ .type = GRPC_ARG_INTEGER,
		  .key = GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
		  .value.integer = MAX_RECONNECT_BACKOFF_MS },
		{ .type = GRPC_ARG_STRING,
		  .key = GRPC_ARG_PRIMARY_USER_AGENT_STRING,
		  .value.string = USER_AGENT },
	};
	grpc_channel_args channel_args = { .num_args = sizeof(args) / sizeof(args[0]), .args = args };
	grpc_channel_credentials *creds = mr_transport_credentials(o, err, errlen);
	grpc_channel *ch;

	if (!creds)
		return NULL; /* errno set */
	ch = grpc_channel_create(o->address, creds, &channel_args);
	grpc_channel_credentials_release(creds);
	if (!ch)
		return mr_fail_null(
			mr_error(err, errlen, -EINVAL, "cannot create a gRPC channel to %s", o->address));
	return ch;
}
/* gRPC's own messages go to the agent's log (as "grpc"), not raw to stderr. */
static void route_grpc_log(gpr_log_func_args *args)
{
	int level = args->severity == GPR_LOG_SEVERITY_ERROR ? MR_LEVEL_WARN : MR_LEVEL_DEBUG;

	mr_log(level, "grpc", "%s", args->message);
}

static int set_up(struct mr_transport *t, const struct mr_transport_opts *o, char *err, size_t errlen)
{
	gpr_set_log_function(route_grpc_log);
	grpc_init();
	t->grpc_initialized = 1;
	if (o->authentication && o->authentication[0]) {
		/* Lowercase on the wire, as HTTP/2 requires. */
		t->auth.key = grpc_slice_from_static_string("authentication");
		t->auth.value = grpc_slice_from_copied_string(o->authentication);
		t->auth_count = 1;
	}
	t->channel = make_channel(o, err, errlen);
	if (!t->channel)
		return -errno;
	t->cq = grpc_completion_queue_create_for_next(NULL);
	if (!t->cq) {
		snprintf(err, errlen, "cannot create a gRPC completion queue");
		return -ENOMEM;
	}
	t->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (t->notify_fd < 0) {
		int e = -errno;

		snprintf(err, errlen, "cannot create the transport's eventfd: %s", strerror(-e));
		return e;
	}
	mr_transport_watch_start(t);
	return mr_transport_thread_start(t, err, errlen);
}

mr_transport *mr_transport_open(const struct mr_transport_opts *o, char *err, size_t errlen)
{
	struct mr_transport *t;
	int rc = check_opts(o, err, errlen);

	if (rc != 0)
		return mr_fail_null(rc);
	t = new_transport(o);
	if (!t)
		return mr_fail_null(mr_error(err, errlen, -ENOMEM, "out of memory"));
	rc = set_up(t, o, err, errlen);
	if (rc == 0 && mr_script_owner_add(t, (mr_script_owner_close_fn)mr_transport_close) != 0)
		rc = mr_error(err, errlen, -ENOMEM, "out of memory");
	if (rc != 0) {
		mr_transport_close(t);
		return mr_fail_null(rc);
	}
	return t;
}

int mr_transport_notify_fd(const mr_transport *t)
{
	return t->notify_fd;
}

void mr_transport_stats(const mr_transport *t, struct mr_transport_stats *out)
{
	const struct mr_tx_stats *s = &t->stats;

	memset(out, 0, sizeof(*out));
	out->calls_started = atomic_load(&s->calls_started);
	out->calls_ok = atomic_load(&s->calls_ok);
	out->calls_failed = atomic_load(&s->calls_failed);
	out->calls_dropped = atomic_load(&s->calls_dropped);
	out->messages_sent = atomic_load(&s->messages_sent);
	out->bytes_sent = atomic_load(&s->bytes_sent);
	out->bytes_queued = atomic_load(&s->bytes_queued);
	out->connected = grpc_channel_check_connectivity_state(t->channel, 0) == GRPC_CHANNEL_READY;
}

void mr_transport_close(mr_transport *t)
{
	if (!t)
		return;
	mr_script_owner_remove(t);
	mr_transport_calls_cancel(t);
	if (t->channel)
		grpc_channel_destroy(t->channel);
	if (t->cq) {
		mr_transport_thread_stop(t);
		grpc_completion_queue_destroy(t->cq);
	}
	mr_transport_results_free(t);
	if (t->auth_count) {
		grpc_slice_unref(t->auth.key);
		grpc_slice_unref(t->auth.value);
	}
	if (t->notify_fd >= 0)
		close(t->notify_fd);
	if (t->grpc_initialized)
		grpc_shutdown();
	pthread_mutex_destroy(&t->lock);
	free(t->address);
	free(t);
}
