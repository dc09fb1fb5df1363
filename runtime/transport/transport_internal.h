/* transport_internal.h - the transport's state, shared by transport.c (life
 * cycle, statistics), transport_credentials.c (channel credentials),
 * transport_thread.c (the completion queue's thread), transport_call.c
 * (calls and their state machine), transport_messages.c (their outbound
 * messages and the byte budget), transport_connectivity.c (the channel's
 * state and its log lines) and transport_results.c (finished calls waiting
 * for the consumer).
 *
 * Threads: the main thread starts calls and queues messages; the transport's
 * thread handles completions. Everything under "lock" is shared by both; the
 * statistics are atomics so that mr_transport_stats needs no lock. */
#ifndef MR_TRANSPORT_TRANSPORT_INTERNAL_H
#define MR_TRANSPORT_TRANSPORT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <grpc/grpc.h>

#include "api_test.h"

#define MR_TRANSPORT_LOG "transport"

/* What a completion-queue tag stands for. */
enum mr_tx_tag_kind {
	MR_TX_SEND, /* a call's send batch */
	MR_TX_RECV, /* a call's receive batch (its status) */
	MR_TX_WATCH /* the channel's connectivity watch */
};

struct mr_tx_call;

struct mr_tx_tag {
	enum mr_tx_tag_kind kind;
	struct mr_tx_call *call; /* NULL for MR_TX_WATCH */
};

/* A message waiting to be sent, then in flight. */
struct mr_tx_message {
	struct mr_tx_message *next;
	grpc_byte_buffer *payload;
	size_t len;
};

struct mr_tx_call {
	struct mr_tx_call *prev, *next; /* the transport's calls */
	int64_t id;
	grpc_call *call;
	struct mr_tx_tag send_tag, recv_tag;
	struct mr_tx_message *head, *tail; /* oldest first; head is in flight while sending */
	int metadata_sent;                 /* SEND_INITIAL_METADATA started */
	int finishing;                     /* the client has no more messages */
	int close_sent;                    /* SEND_CLOSE_FROM_CLIENT started */
	int sending;                       /* a send batch is outstanding */
	int message_in_flight;             /* that batch carries head */
	int send_failed;                   /* a send batch failed: send nothing more */
	int received;                      /* the status arrived */
	grpc_metadata_array initial_metadata, trailing_metadata;
	grpc_byte_buffer *response;
	grpc_status_code status;
	grpc_slice details;
};

struct mr_tx_result;

struct mr_tx_stats {
	atomic_uint_fast64_t calls_started, calls_ok, calls_failed, calls_dropped;
	atomic_uint_fast64_t messages_sent, bytes_sent, bytes_queued;
};

struct mr_transport {
	char *address;
	uint64_t queue_bytes;
	int grpc_initialized;
	grpc_channel *channel;
	grpc_completion_queue *cq;
	grpc_metadata auth; /* the "authentication" header */
	size_t auth_count;  /* 1 when it is set */
	int notify_fd;      /* eventfd: results are waiting */
	pthread_t thread;
	int thread_running;
	struct mr_tx_stats stats;

	/* The transport's thread only. */
	struct mr_tx_tag watch_tag;
	int reachable; /* -1 unknown, 0 no, 1 yes: what was last logged */

	pthread_mutex_t lock;
	int closing; /* no new calls, no new batches */
	int64_t next_id;
	struct mr_tx_call *calls;                         /* calls in flight */
	struct mr_tx_result *results_head, *results_tail; /* finished, not taken */
	struct mr_tx_result *taken;                       /* the last one mr_transport_next returned */
};

/* transport_credentials.c: the channel's credentials, or NULL with why in err
 * and the code in errno (mr_fail_null). */
grpc_channel_credentials *mr_transport_credentials(const struct mr_transport_opts *o, char *err,
						   size_t errlen);

/* transport_thread.c */
int mr_transport_thread_start(struct mr_transport *t, char *err, size_t errlen);
/* Shuts the completion queue down and drains it (on the thread, or here
 * when it never started) until GRPC_QUEUE_SHUTDOWN. */
void mr_transport_thread_stop(struct mr_transport *t);

/* transport_connectivity.c */
void mr_transport_watch_start(struct mr_transport *t);
void mr_transport_watch_fired(struct mr_transport *t);

/* transport_call.c */
/* A completion of one of a call's batches; returns 1 when a result was
 * queued for the consumer. */
int mr_transport_call_event(struct mr_transport *t, struct mr_tx_tag *tag, int success);
/* Refuses new calls and cancels those in flight; their results are dropped. */
void mr_transport_calls_cancel(struct mr_transport *t);

/* transport_messages.c (the caller holds the lock) */
/* 1 when len more bytes fit in queue_bytes; counts a drop when not. */
int mr_transport_fits(struct mr_transport *t, size_t len);
/* Copies a message to the end of the call's queue, or returns -ENOBUFS. */
int mr_transport_message_queue(struct mr_transport *t, struct mr_tx_call *c, const void *data, size_t len);
/* Frees the oldest message; sent tells whether it reached the wire. */
void mr_transport_message_pop(struct mr_transport *t, struct mr_tx_call *c, int sent);
/* Frees every message but the one in flight. */
void mr_transport_messages_drop_unsent(struct mr_transport *t, struct mr_tx_call *c);

/* transport_results.c (the caller holds the lock) */
int mr_transport_result_add(struct mr_transport *t, struct mr_tx_call *c);
void mr_transport_notify(const struct mr_transport *t);
void mr_transport_results_free(struct mr_transport *t);

#endif
