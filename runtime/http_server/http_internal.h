/* http_internal.h - the HTTP endpoint's state, shared by http_endpoint.c
 * (what is served, and the answers), http_listener.c (the listening socket:
 * accepting under the connection cap, pausing when out of descriptors) and
 * http_conn.c (one connection: a request read and answered within its
 * deadline). Single-threaded, on the caller's libevent base. */
#ifndef MR_HTTP_SERVER_HTTP_INTERNAL_H
#define MR_HTTP_SERVER_HTTP_INTERNAL_H

#include <stdint.h>
#include <sys/time.h>

#include "api_test.h"
#include "http_server/http_request.h"

struct evbuffer;
struct event;
struct event_base;
struct http_conn;

/* Why a connection is closed, as counted. */
enum mr_http_close { MR_HTTP_CLOSE_DONE = 0, MR_HTTP_CLOSE_EVICTED, MR_HTTP_CLOSE_TIMEOUT };

struct mr_http {
	struct event_base *base;
	mr_metrics *metrics;
	uint16_t port;
	int healthy;
	char *health_text; /* NULL: the default text for the state */

	int fd; /* listening */
	struct event *accept_ev, *resume_ev;
	uint64_t last_log_ns; /* when an accept failure was last logged */
	uint64_t unlogged;    /* accept failures since */

	struct http_conn *oldest, *newest; /* open connections, by their request's start */
	uint32_t max_conns;
	struct timeval timeout; /* a request's whole time */

	struct mr_http_stats stats;
	int32_t series_open, series_accepted, series_evicted, series_timed_out, series_accept_errors;
};

/* Binds address and starts accepting on h->base. */
int mr_http_listen(struct mr_http *h, const char *address, char *err, size_t errlen);
/* Stops accepting and closes every connection. */
void mr_http_unlisten(struct mr_http *h);

/* Serves a newly accepted socket (closed when that fails). */
int mr_http_conn_open(struct mr_http *h, int fd);
void mr_http_conn_close(struct http_conn *c, enum mr_http_close why);
/* The connection to close to make room (NULL when none is open). */
struct http_conn *mr_http_conn_victim(struct mr_http *h);

/* Appends the answer to req (close: the connection closes after it) to out;
 * 0, or -ENOMEM. */
int mr_http_answer(struct mr_http *h, const struct mr_http_request *req, int close, struct evbuffer *out);
/* Appends an error answer (400, 413, 501, 505), after which the connection closes. */
int mr_http_answer_error(int code, struct evbuffer *out);
/* Counts a connection accepted (opened), or closed for why. */
void mr_http_count_open(struct mr_http *h);
void mr_http_count_close(struct mr_http *h, enum mr_http_close why);
void mr_http_count_accept_error(struct mr_http *h);

#endif
