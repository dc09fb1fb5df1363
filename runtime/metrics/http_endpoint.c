/* http_endpoint.c - the agent's HTTP endpoint on the caller's libevent base:
 * GET /metrics (a metrics registry as Prometheus text) and GET /healthz (200
 * with the health text when healthy, 503 when not). Everything else gets
 * 404, or 405 on a known path. Requests are bounded in size and time. The
 * registry must outlive the server. Single-threaded, like the event loop. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "api_test.h"
#include "base/host_port.h"

enum {
	HTTP_MAX_HEADERS = 8192, /* request line and headers, bytes */
	HTTP_MAX_BODY = 4096,
	HTTP_TIMEOUT_S = 10,
	HTTP_ANY_METHOD = EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
			  EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
			  EVHTTP_REQ_PATCH,
};

static const char METRICS_TYPE[] = "text/plain; version=0.0.4; charset=utf-8";
static const char TEXT_TYPE[] = "text/plain; charset=utf-8";

struct mr_http {
	struct evhttp *http;
	mr_metrics *metrics;
	uint16_t port;
	int healthy;
	char *health_text; /* NULL: the default text for the state */
};

/* Sends a complete reply; when it cannot be built the client gets a 500. */
static void reply(struct evhttp_request *req, int code, const char *reason, const char *type,
		  const char *body, size_t len)
{
	struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
	struct evbuffer *out = evhttp_request_get_output_buffer(req);
	int head = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD; /* libevent sends any body */

	if (evhttp_add_header(headers, "Content-Type", type) ||
	    (code == 405 && evhttp_add_header(headers, "Allow", "GET, HEAD")) ||
	    (!head && evbuffer_add(out, body, len))) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	evhttp_send_reply(req, code, reason, NULL);
}

static void reply_text(struct evhttp_request *req, int code, const char *reason, const char *text)
{
	reply(req, code, reason, TEXT_TYPE, text, strlen(text));
}

static void serve_metrics(struct mr_http *h, struct evhttp_request *req)
{
	size_t len = 0;
	const char *text = mr_metrics_render(h->metrics, &len);

	if (!text) {
		reply_text(req, HTTP_INTERNAL, "Internal Server Error", "out of memory\n");
		return;
	}
	reply(req, HTTP_OK, "OK", METRICS_TYPE, text, len);
}

static void serve_health(struct mr_http *h, struct evhttp_request *req)
{
	const char *text = h->health_text ? h->health_text : h->healthy ? "ok\n" : "unhealthy\n";

	if (h->healthy)
		reply_text(req, HTTP_OK, "OK", text);
	else
		reply_text(req, HTTP_SERVUNAVAIL, "Service Unavailable", text);
}

static void handle(struct evhttp_request *req, void *arg)
{
	struct mr_http *h = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	enum evhttp_cmd_type method = evhttp_request_get_command(req);
	int is_metrics = path && strcmp(path, "/metrics") == 0;
	int is_health = path && strcmp(path, "/healthz") == 0;

	if (!is_metrics && !is_health)
		reply_text(req, HTTP_NOTFOUND, "Not Found", "not found\n");
	else if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD)
		reply_text(req, HTTP_BADMETHOD, "Method Not Allowed", "method not allowed\n");
	else if (is_metrics)
		serve_metrics(h, req);
	else
		serve_health(h, req);
}

/* Resolves host the way the listener will, for a clear message when it cannot. */
static int check_host(const char *host, const char *address, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *ai = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &ai);

	if (rc) {
		snprintf(err, errlen, "cannot listen on %s: %s", address, gai_strerror(rc));
		return -EINVAL;
	}
	freeaddrinfo(ai);
	return 0;
}

static uint16_t bound_port(struct evhttp_bound_socket *sock)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	evutil_socket_t fd = evhttp_bound_socket_get_fd(sock);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static int listen_on(struct mr_http *h, const char *address, char *err, size_t errlen)
{
	char host[NI_MAXHOST];
	uint16_t port;
	struct evhttp_bound_socket *sock;

	if (mr_host_port_parse(address, host, sizeof(host), &port) != 0) {
		snprintf(err, errlen, "cannot listen on %s: expected host:port or [ipv6]:port", address);
		return -EINVAL;
	}
	if (check_host(host, address, err, errlen))
		return -EINVAL;
	errno = 0;
	sock = evhttp_bind_socket_with_handle(h->http, host, port);
	if (!sock) {
		snprintf(err, errlen, "cannot listen on %s: %s", address,
			 errno ? strerror(errno) : "bind failed");
		return -EINVAL;
	}
	h->port = bound_port(sock);
	if (h->port == 0) {
		snprintf(err, errlen, "cannot listen on %s: getsockname: %s", address, strerror(errno));
		return -EINVAL;
	}
	return 0;
}

static void set_limits(struct evhttp *http)
{
	evhttp_set_max_headers_size(http, HTTP_MAX_HEADERS);
	evhttp_set_max_body_size(http, HTTP_MAX_BODY);
	evhttp_set_timeout(http, HTTP_TIMEOUT_S);
	evhttp_set_allowed_methods(http, HTTP_ANY_METHOD);
}

mr_http *mr_http_open(void *base, const char *address, mr_metrics *m, char *err, size_t errlen)
{
	struct mr_http *h;

	if (!base || !address || !m) {
		snprintf(err, errlen, "an event base, an address and a registry are required");
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h || !(h->http = evhttp_new(base))) {
		snprintf(err, errlen, "cannot listen on %s: out of memory", address);
		free(h);
		return NULL;
	}
	h->metrics = m;
	h->healthy = 1;
	set_limits(h->http);
	evhttp_set_gencb(h->http, handle, h);
	if (listen_on(h, address, err, errlen)) {
		mr_http_close(h);
		return NULL;
	}
	return h;
}

uint16_t mr_http_port(const mr_http *h)
{
	return h ? h->port : 0;
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
	evhttp_free(h->http);
	free(h->health_text);
	free(h);
}
