/* http_endpoint.c - the agent's HTTP endpoint on the caller's libevent base:
 * GET /metrics (a metrics registry as Prometheus text) and GET /healthz (200
 * with the health text when healthy, 503 when not). Everything else gets
 * 404, or 405 on a known path. Requests are bounded in size and in time (a
 * deadline for the whole request), open connections in number
 * (http_listener.c, http_conn.c), and what the endpoint drops is counted in
 * the registry. The registry must outlive the server. Single-threaded, like
 * the event loop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "base/first_error.h"
#include "base/log.h"
#include "http_server/http_internal.h"

enum {
	HTTP_MAX_CONNECTIONS = 64,
	HTTP_TIMEOUT_MS = 10000,
};

static const char METRICS_TYPE[] = "text/plain; version=0.0.4; charset=utf-8";
static const char TEXT_TYPE[] = "text/plain; charset=utf-8";

/* An answer being written: where, and how. */
struct answer {
	struct evbuffer *out;
	int head;  /* HEAD: no body, the same headers */
	int close; /* the connection closes after it */
	int rc;    /* -ENOMEM when it could not be written */
};

static void reply(struct answer *a, int code, const char *reason, const char *type, const char *body,
		  size_t len)
{
	if (evbuffer_add_printf(a->out,
				"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s\r\n", code,
				reason, type, len, code == 405 ? "Allow: GET, HEAD\r\n" : "",
				a->close ? "Connection: close\r\n" : "") < 0 ||
	    (!a->head && evbuffer_add(a->out, body, len) != 0))
		a->rc = -ENOMEM;
}

static void reply_text(struct answer *a, int code, const char *reason, const char *text)
{
	reply(a, code, reason, TEXT_TYPE, text, strlen(text));
}

static void serve_metrics(struct mr_http *h, struct answer *a)
{
	size_t len = 0;
	const char *text = mr_metrics_render(h->metrics, &len);

	if (!text) {
		reply_text(a, 500, "Internal Server Error", "out of memory\n");
		return;
	}
	reply(a, 200, "OK", METRICS_TYPE, text, len);
}

static void serve_health(struct mr_http *h, struct answer *a)
{
	const char *text = h->health_text ? h->health_text : h->healthy ? "ok\n" : "unhealthy\n";

	if (h->healthy)
		reply_text(a, 200, "OK", text);
	else
		reply_text(a, 503, "Service Unavailable", text);
}

static int is_path(const struct mr_http_request *req, const char *path)
{
	return req->path_len == strlen(path) && memcmp(req->path, path, req->path_len) == 0;
}

int mr_http_answer(struct mr_http *h, const struct mr_http_request *req, int close, struct evbuffer *out)
{
	struct answer a = { .out = out, .head = req->method == MR_HTTP_HEAD, .close = close };
	int is_metrics = is_path(req, "/metrics");
	int is_health = is_path(req, "/healthz");

	if (!is_metrics && !is_health)
		reply_text(&a, 404, "Not Found", "not found\n");
	else if (req->method == MR_HTTP_OTHER)
		reply_text(&a, 405, "Method Not Allowed", "method not allowed\n");
	else if (is_metrics)
		serve_metrics(h, &a);
	else
		serve_health(h, &a);
	return a.rc;
}

int mr_http_answer_error(int code, struct evbuffer *out)
{
	struct answer a = { .out = out, .close = 1 };

	if (code == 413)
		reply_text(&a, 413, "Payload Too Large", "request body too large\n");
	else if (code == 501)
		reply_text(&a, 501, "Not Implemented", "request bodies in chunks are not accepted\n");
	else if (code == 505)
		reply_text(&a, 505, "HTTP Version Not Supported", "HTTP/1.0 and HTTP/1.1 only\n");
	else
		reply_text(&a, 400, "Bad Request", "bad request\n");
	return a.rc;
}

void mr_http_count_open(struct mr_http *h)
{
	h->stats.open++;
	h->stats.accepted++;
	mr_metrics_set(h->metrics, h->series_open, h->stats.open);
	mr_metrics_add(h->metrics, h->series_accepted, 1);
}

void mr_http_count_close(struct mr_http *h, enum mr_http_close why)
{
	h->stats.open--;
	mr_metrics_set(h->metrics, h->series_open, h->stats.open);
	if (why == MR_HTTP_CLOSE_EVICTED) {
		h->stats.evicted++;
		mr_metrics_add(h->metrics, h->series_evicted, 1);
	} else if (why == MR_HTTP_CLOSE_TIMEOUT) {
		h->stats.timed_out++;
		mr_metrics_add(h->metrics, h->series_timed_out, 1);
	}
}

void mr_http_count_accept_error(struct mr_http *h)
{
	h->stats.accept_errors++;
	mr_metrics_add(h->metrics, h->series_accept_errors, 1);
}

static int add_series(struct mr_http *h, char *err, size_t errlen)
{
	static const char CLOSED_HELP[] =
		"HTTP connections the endpoint closed with a request unanswered: evicted "
		"(oldest first, to stay within the connection cap) or timeout (the "
		"whole-request deadline)";
	mr_metrics *m = h->metrics;

	h->series_open = mr_metrics_series(m, MR_GAUGE, "moonrover_http_connections",
					   "HTTP connections open now", "", err, errlen);
	h->series_accepted = mr_metrics_series(m, MR_COUNTER, "moonrover_http_connections_total",
					       "HTTP connections accepted", "", err, errlen);
	h->series_evicted = mr_metrics_series(m, MR_COUNTER, "moonrover_http_connections_closed_total",
					      CLOSED_HELP, "reason=\"evicted\"", err, errlen);
	h->series_timed_out = mr_metrics_series(m, MR_COUNTER, "moonrover_http_connections_closed_total",
						CLOSED_HELP, "reason=\"timeout\"", err, errlen);
	h->series_accept_errors =
		mr_metrics_series(m, MR_COUNTER, "moonrover_http_accept_errors_total",
				  "accept() failures on the HTTP endpoint (each pauses accepting "
				  "for 100 ms)",
				  "", err, errlen);
	return MR_FIRST_ERROR(h->series_open, h->series_accepted, h->series_evicted, h->series_timed_out,
			      h->series_accept_errors);
}

mr_http *mr_http_open(void *base, const char *address, mr_metrics *m, const struct mr_http_opts *o, char *err,
		      size_t errlen)
{
	struct mr_http *h;
	uint32_t timeout_ms = o && o->timeout_ms ? o->timeout_ms : HTTP_TIMEOUT_MS;
	int rc;

	if (!base || !address || !m)
		return mr_fail_null(mr_error(err, errlen, -EINVAL,
					     "an event base, an address and a registry are required"));
	h = calloc(1, sizeof(*h));
	if (!h)
		return mr_fail_null(
			mr_error(err, errlen, -ENOMEM, "cannot listen on %s: out of memory", address));
	h->base = base;
	h->metrics = m;
	h->healthy = 1;
	h->fd = -1;
	h->max_conns = o && o->max_connections ? o->max_connections : HTTP_MAX_CONNECTIONS;
	h->timeout.tv_sec = timeout_ms / 1000;
	h->timeout.tv_usec = (timeout_ms % 1000) * 1000;
	rc = add_series(h, err, errlen);
	rc = rc ?: mr_http_listen(h, address, err, errlen);
	if (rc != 0) {
		mr_http_close(h);
		return mr_fail_null(rc);
	}
	return h;
}

uint16_t mr_http_port(const mr_http *h)
{
	return h ? h->port : 0;
}

void mr_http_stats(const mr_http *h, struct mr_http_stats *out)
{
	*out = h->stats;
}

void mr_http_set_health(mr_http *h, int32_t healthy, const char *text)
{
	if (!h)
		return;
	free(h->health_text);
	h->health_text = text ? strdup(text) : NULL; /* out of memory: the default text */
	h->healthy = healthy != 0;
}

void mr_http_close(mr_http *h)
{
	if (!h)
		return;
	mr_http_unlisten(h);
	free(h->health_text);
	free(h);
}
