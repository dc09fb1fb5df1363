/* http_listener.c - the HTTP endpoint's listening socket. Connections are
 * accepted a few at a time per wakeup, so that signals, timers and the
 * answers already under way get their turn in the loop. At most max_conns
 * are open: a new one closes another, the slowest to send its request first
 * (see http_conn.c), so a fresh request (a health probe) still gets in under
 * a flood of slow clients. The kernel hands over a connection only once its
 * client has sent something (TCP_DEFER_ACCEPT): a client that connects and
 * waits takes neither a descriptor nor a place, and one whose request is
 * already there (a probe, however long the CPU kept it from sending) is read
 * at once, where an accepted idle connection would be the first to go. New
 * connections are accepted after the open ones are served (a lower priority
 * in the event loop). When accept() fails for want of descriptors (or
 * memory), accepting pauses for a moment instead of failing again at once in
 * a busy loop, a connection is closed the same way to free a descriptor, and the
 * failure is logged once, then at most once a minute with a count. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/host_port.h"
#include "base/log.h"
#include "http_server/http_internal.h"

enum {
	ACCEPTS_PER_WAKEUP = 16,
	PAUSE_MS = 100,
};
#define LOG_EVERY_NS (60 * 1000000000ULL)

/* Errors of one incoming connection only (see accept(2)): the next may do. */
static int passing_error(int e)
{
	return e == EINTR || e == ECONNABORTED || e == EPROTO || e == EPERM || e == ENETDOWN ||
	       e == ENOPROTOOPT || e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH || e == EOPNOTSUPP ||
	       e == ENETUNREACH;
}

static void log_failure(struct mr_http *h, int e)
{
	uint64_t now = mr_sys_monotonic_ns();

	if (h->stats.log_lines > 0 && now - h->last_log_ns < LOG_EVERY_NS) {
		h->unlogged++;
		return;
	}
	if (h->stats.log_lines == 0)
		mr_log(MR_LEVEL_WARN, "http",
		       "cannot accept a connection: %s; pausing new ones %d ms at a time while it lasts "
		       "(logged again at most once a minute)",
		       strerror(e), PAUSE_MS);
	else
		mr_log(MR_LEVEL_WARN, "http",
		       "cannot accept a connection: %s (%llu times in the last %llu s)", strerror(e),
		       (unsigned long long)h->unlogged + 1,
		       (unsigned long long)((now - h->last_log_ns) / 1000000000ULL));
	h->last_log_ns = now;
	h->unlogged = 0;
	h->stats.log_lines++;
}

static void pause_accepting(struct mr_http *h, int e)
{
	struct timeval pause = { .tv_usec = PAUSE_MS * 1000 };

	mr_http_count_accept_error(h);
	if (event_del(h->accept_ev) != 0 || evtimer_add(h->resume_ev, &pause) != 0)
		mr_log(MR_LEVEL_ERROR, "http", "cannot pause accepting connections");
	if (h->oldest && (e == EMFILE || e == ENFILE))
		mr_http_conn_close(mr_http_conn_victim(h), MR_HTTP_CLOSE_EVICTED);
	log_failure(h, e);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct mr_http *h = arg;

	(void)fd;
	(void)what;
	if (event_add(h->accept_ev, NULL) != 0)
		mr_log(MR_LEVEL_ERROR, "http", "cannot resume accepting connections");
}

/* 1 when a connection waits to be accepted. */
static int pending(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct mr_http *h = arg;

	(void)what;
	for (int i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (fd < 0 && passing_error(errno))
			continue;
		/* accept() takes a descriptor before it looks for a connection */
		if (fd < 0 && (errno == EMFILE || errno == ENFILE) && !pending(lfd))
			return;
		if (fd < 0) {
			pause_accepting(h, errno);
			return;
		}
		if (h->stats.open >= h->max_conns)
			mr_http_conn_close(mr_http_conn_victim(h), MR_HTTP_CLOSE_EVICTED);
		(void)mr_http_conn_open(h, fd); /* out of memory: it closed fd, the client sees that */
	}
}

/* Open connections are served before new ones are accepted. */
static int lowest_priority(struct mr_http *h)
{
	if (event_base_get_npriorities(h->base) < MR_HTTP_PRIORITIES)
		return 0;
	return event_priority_set(h->accept_ev, MR_HTTP_PRIORITIES - 1);
}

/* getaddrinfo's failure as a negative errno (its own, when it has one) and
 * its message; errno is read first, before anything else can change it. */
static int gai_failure(int gai, const char **msg)
{
	int e = errno;

	*msg = gai == EAI_SYSTEM ? strerror(e) : gai_strerror(gai);
	return gai == EAI_SYSTEM ? -e : gai == EAI_MEMORY ? -ENOMEM : -EADDRNOTAVAIL;
}

/* Resolves host as a listener would; the first address found is used. */
static int resolve(const char *host, uint16_t port, const char *address, struct addrinfo **ai, char *err,
		   size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	char service[8];
	const char *msg;
	int rc;

	*ai = NULL;
	snprintf(service, sizeof(service), "%u", (unsigned)port);
	rc = getaddrinfo(host, service, &hints, ai);
	if (rc == 0)
		return 0;
	rc = gai_failure(rc, &msg);
	return mr_error(err, errlen, rc, "cannot listen on %s: %s", address, msg);
}

/* The port fd is bound to, or a negative errno. */
static int bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return -errno;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* defer_s: how long the kernel waits for a client's first bytes before it
 * hands the connection over anyway. */
static int bind_socket(const struct addrinfo *ai, int defer_s)
{
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), on = 1;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof(defer_s)) != 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

int mr_http_listen(struct mr_http *h, const char *address, char *err, size_t errlen)
{
	char host[NI_MAXHOST];
	uint16_t port;
	struct addrinfo *ai;

	int rc = mr_host_port_parse(address, host, sizeof(host), &port);

	if (rc != 0)
		return mr_error(err, errlen, rc, "cannot listen on %s: expected host:port or [ipv6]:port",
				address);
	rc = resolve(host, port, address, &ai, err, errlen);
	if (rc != 0)
		return rc;
	h->fd = bind_socket(ai, h->timeout.tv_sec > 0 ? (int)h->timeout.tv_sec : 1);
	freeaddrinfo(ai);
	if (h->fd < 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", address, strerror(-h->fd));
		return h->fd;
	}
	rc = bound_port(h->fd);
	if (rc < 0)
		return mr_error(err, errlen, rc, "cannot listen on %s: %s", address, strerror(-rc));
	h->port = (uint16_t)rc;
	h->accept_ev = event_new(h->base, h->fd, EV_READ | EV_PERSIST, on_accept, h);
	h->resume_ev = evtimer_new(h->base, on_resume, h);
	if (!h->accept_ev || !h->resume_ev || lowest_priority(h) != 0 || event_add(h->accept_ev, NULL) != 0)
		return mr_error(err, errlen, -ENOMEM, "cannot listen on %s: out of memory", address);
	return 0;
}

void mr_http_unlisten(struct mr_http *h)
{
	while (h->oldest)
		mr_http_conn_close(h->oldest, MR_HTTP_CLOSE_DONE);
	if (h->accept_ev)
		event_free(h->accept_ev);
	if (h->resume_ev)
		event_free(h->resume_ev);
	if (h->fd >= 0)
		close(h->fd);
}
