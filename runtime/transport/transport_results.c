/* transport_results.c - finished calls waiting for the consumer: a FIFO
 * under the transport's lock (calls end at a low rate), filled by the
 * transport's thread and emptied by mr_transport_next on the main thread,
 * plus the eventfd that tells the main loop results are waiting. A result
 * taken by mr_transport_next lives until the next call of it. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>

#include "transport/transport_internal.h"

struct mr_tx_result {
	struct mr_tx_result *next;
	int64_t id;
	grpc_status_code code;
	char *details; /* gpr-allocated */
	grpc_slice response;
	int has_response;
};

static void free_result(struct mr_tx_result *r)
{
	if (!r)
		return;
	gpr_free(r->details);
	if (r->has_response)
		grpc_slice_unref(r->response);
	free(r);
}

static void take_response(struct mr_tx_result *r, grpc_byte_buffer *bb)
{
	grpc_byte_buffer_reader reader;

	if (!bb || !grpc_byte_buffer_reader_init(&reader, bb))
		return;
	r->response = grpc_byte_buffer_reader_readall(&reader);
	r->has_response = 1;
	grpc_byte_buffer_reader_destroy(&reader);
}

int mr_transport_result_add(struct mr_transport *t, struct mr_tx_call *c)
{
	struct mr_tx_result *r = calloc(1, sizeof(*r));

	if (!r) {
		atomic_fetch_add(&t->stats.calls_dropped, 1);
		return -ENOMEM;
	}
	r->id = c->id;
	r->code = c->status;
	r->details = grpc_slice_to_c_string(c->details);
	take_response(r, c->response);
	atomic_fetch_add(r->code == GRPC_STATUS_OK ? &t->stats.calls_ok : &t->stats.calls_failed, 1);
	if (t->results_tail)
		t->results_tail->next = r;
	else
		t->results_head = r;
	t->results_tail = r;
	return 0;
}

void mr_transport_notify(const struct mr_transport *t)
{
	uint64_t one = 1;
	ssize_t n = write(t->notify_fd, &one, sizeof(one));

	/* It can only fail with EAGAIN, when the eventfd's counter is full:
	 * then it is readable already. */
	(void)n;
}

static struct mr_tx_result *pop(struct mr_transport *t)
{
	struct mr_tx_result *r;

	pthread_mutex_lock(&t->lock);
	r = t->results_head;
	if (r) {
		t->results_head = r->next;
		if (!t->results_head)
			t->results_tail = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

int mr_transport_next(mr_transport *t, struct mr_rpc_result *out)
{
	struct mr_tx_result *r = pop(t);

	free_result(t->taken);
	t->taken = r;
	if (!r)
		return 0;
	out->id = r->id;
	out->state = r->code == GRPC_STATUS_OK ? MR_RPC_OK : MR_RPC_FAILED;
	out->code = r->code;
	out->details = r->details;
	out->response = r->has_response ? GRPC_SLICE_START_PTR(r->response) : NULL;
	out->response_len = r->has_response ? GRPC_SLICE_LENGTH(r->response) : 0;
	return 1;
}

void mr_transport_results_free(struct mr_transport *t)
{
	while (t->results_head) {
		struct mr_tx_result *r = t->results_head;

		t->results_head = r->next;
		free_result(r);
	}
	t->results_tail = NULL;
	free_result(t->taken);
	t->taken = NULL;
}
