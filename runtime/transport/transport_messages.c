/* transport_messages.c - a call's outbound messages: copied into gRPC byte
 * buffers, oldest first, counted in the transport's bytes_queued from the
 * moment they are accepted until their SEND_MESSAGE completes or the call
 * drops them. A call or message that would take bytes_queued beyond
 * queue_bytes is refused (-ENOBUFS) and counted in calls_dropped. The
 * caller holds the transport's lock. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>

#include "transport/transport_internal.h"

static void free_message(struct mr_transport *t, struct mr_tx_message *m)
{
	atomic_fetch_sub(&t->stats.bytes_queued, m->len);
	grpc_byte_buffer_destroy(m->payload);
	free(m);
}

void mr_transport_message_pop(struct mr_transport *t, struct mr_tx_call *c, int sent)
{
	struct mr_tx_message *m = c->head;

	c->head = m->next;
	if (!c->head)
		c->tail = NULL;
	if (sent) {
		atomic_fetch_add(&t->stats.messages_sent, 1);
		atomic_fetch_add(&t->stats.bytes_sent, m->len);
	}
	free_message(t, m);
}

/* A message in flight stays until its batch completes. */
void mr_transport_messages_drop_unsent(struct mr_transport *t, struct mr_tx_call *c)
{
	struct mr_tx_message *m = c->message_in_flight ? c->head->next : c->head;

	if (c->message_in_flight) {
		c->head->next = NULL;
		c->tail = c->head;
	} else {
		c->head = c->tail = NULL;
	}
	while (m) {
		struct mr_tx_message *next = m->next;

		free_message(t, m);
		m = next;
	}
}

int mr_transport_fits(struct mr_transport *t, size_t len)
{
	uint64_t queued = atomic_load(&t->stats.bytes_queued);

	if (len <= t->queue_bytes && queued <= t->queue_bytes - len)
		return 1;
	atomic_fetch_add(&t->stats.calls_dropped, 1);
	return 0;
}

int mr_transport_message_queue(struct mr_transport *t, struct mr_tx_call *c, const void *data, size_t len)
{
	struct mr_tx_message *m;
	grpc_slice s;

	if (!mr_transport_fits(t, len))
		return -ENOBUFS;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	s = grpc_slice_malloc(len);
	if (len)
		memcpy(GRPC_SLICE_START_PTR(s), data, len);
	m->payload = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
	m->len = len;
	if (c->tail)
		c->tail->next = m;
	else
		c->head = m;
	c->tail = m;
	atomic_fetch_add(&t->stats.bytes_queued, len);
	return 0;
}
