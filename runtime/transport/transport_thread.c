/* transport_thread.c - the thread that owns the transport's completion
 * queue. It blocks in grpc_completion_queue_next (gRPC's I/O makes progress
 * while a thread waits there), hands each completion to the call or the
 * connectivity watch it belongs to, and makes the notify eventfd readable
 * when a call's result was queued. It stops at GRPC_QUEUE_SHUTDOWN, after
 * mr_transport_close shut the queue down. Like every worker
 * thread it takes no signal (base/thread.h). */
#include <stdio.h>
#include <string.h>

#include "base/thread.h"
#include "transport/transport_internal.h"

#define THREAD_NAME "mr-transport"

static void handle(struct mr_transport *t, struct mr_tx_tag *tag, int success)
{
	if (tag->kind == MR_TX_WATCH)
		mr_transport_watch_fired(t);
	else if (mr_transport_call_event(t, tag, success))
		mr_transport_notify(t);
}

static void *run(void *arg)
{
	struct mr_transport *t = arg;

	for (;;) {
		grpc_event ev = grpc_completion_queue_next(t->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type == GRPC_OP_COMPLETE)
			handle(t, ev.tag, ev.success);
	}
	return NULL;
}

int mr_transport_thread_start(struct mr_transport *t, char *err, size_t errlen)
{
	int e = mr_thread_start(&t->thread, &t->thread_running, THREAD_NAME, run, t);

	if (e)
		snprintf(err, errlen, "cannot start the transport's thread: %s", strerror(-e));
	return e;
}

void mr_transport_thread_stop(struct mr_transport *t)
{
	grpc_completion_queue_shutdown(t->cq);
	if (t->thread_running)
		pthread_join(t->thread, NULL);
	else
		run(t);
	t->thread_running = 0;
}
