/* transport_call.c - calls and their state machine. A call has two batches:
 * the receive batch (initial metadata, the response, the status), started
 * once, and the send batch, started again and again by pump(): the initial
 * metadata first, then at most one message at a time (gRPC allows only one
 * SEND_MESSAGE outstanding per call), then close-from-client once the
 * client finished and the last message went out. A unary call is a stream
 * with one message that is finished at once, so its first send batch holds
 * all three send operations.
 *
 * A call ends when its status arrived and no send batch is outstanding; then
 * its result is queued for the consumer (unless the transport is closing)
 * and everything it holds is freed. Its messages wait in the queue of
 * transport_messages.c, which keeps the bytes within queue_bytes.
 *
 * Functions here run with the transport's lock held, except the exported
 * mr_transport_* ones, which take it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/support/time.h>

#include "base/log.h"
#include "transport/transport_internal.h"

static void link_call(struct mr_transport *t, struct mr_tx_call *c)
{
	c->next = t->calls;
	if (t->calls)
		t->calls->prev = c;
	t->calls = c;
}

static void unlink_call(struct mr_transport *t, struct mr_tx_call *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		t->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

static struct mr_tx_call *find_call(const struct mr_transport *t, int64_t id)
{
	struct mr_tx_call *c = t->calls;

	while (c && c->id != id)
		c = c->next;
	return c;
}

/* Starts the next send batch when the call is ready for one. */
static int pump(struct mr_transport *t, struct mr_tx_call *c)
{
	grpc_op ops[3];
	size_t n = 0;
	int message = 0, close = 0;

	if (c->sending || c->received || c->send_failed || t->closing)
		return 0;
	memset(ops, 0, sizeof(ops));
	if (!c->metadata_sent) {
		ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
		ops[n].data.send_initial_metadata.count = t->auth_count;
		ops[n++].data.send_initial_metadata.metadata = t->auth_count ? &t->auth : NULL;
	}
	if (c->head) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = c->head->payload;
		message = 1;
	}
	if (c->finishing && !c->close_sent && (!c->head || !c->head->next)) {
		ops[n++].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
		close = 1;
	}
	if (n == 0)
		return 0;
	if (grpc_call_start_batch(c->call, ops, n, &c->send_tag, NULL) != GRPC_CALL_OK)
		return -EIO;
	c->sending = 1;
	c->metadata_sent = 1;
	c->message_in_flight = message;
	c->close_sent |= close;
	return 0;
}

/* Gives up sending: the call ends with the status gRPC reports (CANCELLED). */
static void abort_call(struct mr_transport *t, struct mr_tx_call *c)
{
	/* It fails only for a non-NULL reserved argument. */
	(void)grpc_call_cancel(c->call, NULL);
	c->send_failed = 1;
	mr_transport_messages_drop_unsent(t, c);
}

static int start_receive(struct mr_tx_call *c)
{
	grpc_op ops[3];

	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[0].data.recv_initial_metadata.recv_initial_metadata = &c->initial_metadata;
	ops[1].op = GRPC_OP_RECV_MESSAGE;
	ops[1].data.recv_message.recv_message = &c->response;
	ops[2].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[2].data.recv_status_on_client.trailing_metadata = &c->trailing_metadata;
	ops[2].data.recv_status_on_client.status = &c->status;
	ops[2].data.recv_status_on_client.status_details = &c->details;
	return grpc_call_start_batch(c->call, ops, 3, &c->recv_tag, NULL) == GRPC_CALL_OK ? 0 : -EIO;
}

static gpr_timespec deadline(uint32_t timeout_ms)
{
	if (!timeout_ms)
		return gpr_inf_future(GPR_CLOCK_MONOTONIC);
	return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
}

static struct mr_tx_call *new_call(struct mr_transport *t, const char *method, uint32_t timeout_ms)
{
	struct mr_tx_call *c = calloc(1, sizeof(*c));
	grpc_slice m;

	if (!c)
		return NULL;
	m = grpc_slice_from_copied_string(method);
	c->call = grpc_channel_create_call(t->channel, NULL, GRPC_PROPAGATE_DEFAULTS, t->cq, m, NULL,
					   deadline(timeout_ms), NULL);
	grpc_slice_unref(m);
	if (!c->call) {
		free(c);
		return NULL;
	}
	c->send_tag = (struct mr_tx_tag){ .kind = MR_TX_SEND, .call = c };
	c->recv_tag = (struct mr_tx_tag){ .kind = MR_TX_RECV, .call = c };
	grpc_metadata_array_init(&c->initial_metadata);
	grpc_metadata_array_init(&c->trailing_metadata);
	c->details = grpc_empty_slice();
	c->id = t->next_id++;
	return c;
}

static void free_call(struct mr_transport *t, struct mr_tx_call *c)
{
	while (c->head)
		mr_transport_message_pop(t, c, 0);
	grpc_metadata_array_destroy(&c->initial_metadata);
	grpc_metadata_array_destroy(&c->trailing_metadata);
	if (c->response)
		grpc_byte_buffer_destroy(c->response);
	grpc_slice_unref(c->details);
	grpc_call_unref(c->call);
	free(c);
}

/* Starts a new call's batches; returns its id, or a negative errno when
 * nothing could be started (the call is freed then). */
static int64_t start(struct mr_transport *t, struct mr_tx_call *c)
{
	int rc = start_receive(c);

	if (rc != 0) {
		free_call(t, c);
		return rc;
	}
	link_call(t, c);
	atomic_fetch_add(&t->stats.calls_started, 1);
	/* Should the first send batch not start, the call still ends (CANCELLED)
	 * and reports through mr_transport_next like any other. */
	if (pump(t, c) != 0)
		abort_call(t, c);
	return c->id;
}

/* Ends the call when nothing of it is outstanding; returns 1 when its
 * result was queued. */
static int end_if_done(struct mr_transport *t, struct mr_tx_call *c)
{
	int queued = 0;

	if (!c->received || c->sending)
		return 0;
	unlink_call(t, c);
	if (!t->closing)
		queued = mr_transport_result_add(t, c) == 0;
	free_call(t, c);
	return queued;
}

static void sent(struct mr_transport *t, struct mr_tx_call *c, int success)
{
	c->sending = 0;
	if (c->message_in_flight)
		mr_transport_message_pop(t, c, success);
	c->message_in_flight = 0;
	if (!success) {
		c->send_failed = 1;
		mr_transport_messages_drop_unsent(t, c);
	} else if (pump(t, c) != 0) {
		abort_call(t, c);
	}
}

int mr_transport_call_event(struct mr_transport *t, struct mr_tx_tag *tag, int success)
{
	struct mr_tx_call *c = tag->call;
	int queued;

	pthread_mutex_lock(&t->lock);
	if (tag->kind == MR_TX_SEND) {
		sent(t, c, success);
	} else {
		c->received = 1;
		mr_transport_messages_drop_unsent(t, c);
	}
	queued = end_if_done(t, c);
	pthread_mutex_unlock(&t->lock);
	return queued;
}

void mr_transport_calls_cancel(struct mr_transport *t)
{
	pthread_mutex_lock(&t->lock);
	t->closing = 1;
	for (struct mr_tx_call *c = t->calls; c; c = c->next)
		(void)grpc_call_cancel(c->call, NULL);
	pthread_mutex_unlock(&t->lock);
}

static int valid_method(const char *method)
{
	return method && method[0] == '/' && strchr(method + 1, '/');
}

static int64_t unary_locked(mr_transport *t, const char *method, const void *request, size_t len,
			    uint32_t timeout_ms)
{
	struct mr_tx_call *c;
	int e;

	if (t->closing)
		return -ESHUTDOWN;
	if (!mr_transport_fits(t, len))
		return -ENOBUFS;
	c = new_call(t, method, timeout_ms);
	if (!c)
		return -ENOMEM;
	e = mr_transport_message_queue(t, c, request, len);
	if (e) {
		free_call(t, c);
		return e;
	}
	c->finishing = 1;
	return start(t, c);
}

/* The message of a call that could not start or go on. */
static int64_t call_failed(int64_t rc, const char *what, const char *method, char *err, size_t errlen)
{
	const char *why = rc == -ENOBUFS     ? "over the queue's byte budget (dropped and counted)"
			  : rc == -ESHUTDOWN ? "the transport is closing"
			  : rc == -EPIPE     ? "the call has ended or was finished"
			  : rc == -ENOENT    ? "no such call"
			  : rc == -EALREADY  ? "it is finished already"
			  : rc == -EINVAL    ? "bad arguments (a method is \"/package.Service/Method\")"
					     : strerror((int)-rc);

	return mr_error(err, errlen, (int)rc, "%s %s: %s", what, method ? method : "(null)", why);
}

int64_t mr_transport_unary(mr_transport *t, const char *method, const void *request, size_t len,
			   uint32_t timeout_ms, char *err, size_t errlen)
{
	int64_t id;

	if (!valid_method(method) || (!request && len))
		return call_failed(-EINVAL, "cannot call", method, err, errlen);
	pthread_mutex_lock(&t->lock);
	id = unary_locked(t, method, request, len, timeout_ms);
	pthread_mutex_unlock(&t->lock);
	return id < 0 ? call_failed(id, "cannot call", method, err, errlen) : id;
}

int64_t mr_transport_stream_open(mr_transport *t, const char *method, uint32_t timeout_ms, char *err,
				 size_t errlen)
{
	struct mr_tx_call *c;
	int64_t id;

	if (!valid_method(method))
		return call_failed(-EINVAL, "cannot open a stream to", method, err, errlen);
	pthread_mutex_lock(&t->lock);
	c = t->closing ? NULL : new_call(t, method, timeout_ms);
	id = c ? start(t, c) : (t->closing ? -ESHUTDOWN : -ENOMEM);
	pthread_mutex_unlock(&t->lock);
	return id < 0 ? call_failed(id, "cannot open a stream to", method, err, errlen) : id;
}

static int send_locked(mr_transport *t, int64_t id, const void *message, size_t len)
{
	struct mr_tx_call *c = find_call(t, id);
	int e;

	if (!c)
		return -ENOENT;
	if (c->finishing || c->received || c->send_failed)
		return -EPIPE;
	e = mr_transport_message_queue(t, c, message, len);
	if (e == 0 && pump(t, c) != 0) {
		abort_call(t, c);
		e = -EIO;
	}
	return e;
}

int mr_transport_stream_send(mr_transport *t, int64_t id, const void *message, size_t len, char *err,
			     size_t errlen)
{
	int e = -EINVAL;

	if (message || !len) {
		pthread_mutex_lock(&t->lock);
		e = send_locked(t, id, message, len);
		pthread_mutex_unlock(&t->lock);
	}
	return e ? (int)call_failed(e, "cannot send on", "a stream", err, errlen) : 0;
}

int mr_transport_stream_finish(mr_transport *t, int64_t id, char *err, size_t errlen)
{
	struct mr_tx_call *c;
	int e = 0;

	pthread_mutex_lock(&t->lock);
	c = find_call(t, id);
	if (!c)
		e = -ENOENT;
	else if (c->finishing)
		e = -EALREADY;
	else {
		c->finishing = 1;
		if (pump(t, c) != 0) {
			abort_call(t, c);
			e = -EIO;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return e ? (int)call_failed(e, "cannot finish", "a stream", err, errlen) : 0;
}
