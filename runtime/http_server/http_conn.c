/* http_conn.c - one connection of the HTTP endpoint: its request is read
 * (head and body bounded in size), answered, and written out, all within one
 * deadline that starts when the connection opens or its previous answer is
 * sent. The deadline is never reset by a byte arriving, so a client that
 * trickles its request (slowloris) is closed when it runs out, like one that
 * sends nothing. Connections are kept in a list ordered by that start, from
 * which the listener picks one to close to make room for a new one: the
 * oldest whose request has begun but is not complete (the slowest sender),
 * else the oldest idle one that has sent nothing, else the oldest idle one
 * whose bytes are still unread, else the oldest being answered. A client
 * that connects and then sends its whole request at once (a health probe)
 * is thereby the last to go, even while many others keep reconnecting and
 * the endpoint has not yet had its turn to read it. */
#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "http_server/http_internal.h"

enum {
	HTTP_MAX_HEAD = 8192, /* request line and headers, bytes */
	HTTP_MAX_BODY = 4096,
	/* Reading pauses past this much unread input (pipelined requests). */
	HTTP_READ_HIGH = 16384,
};

struct http_conn {
	struct mr_http *h;
	struct http_conn *prev, *next; /* h's list, oldest start first */
	struct bufferevent *bev;
	struct event *deadline;
	int answering;   /* an answer is being written: the next request waits */
	int close_after; /* close once the answer is written */
	int eof;         /* the client sends no more: answer what came, then close */
};

static void list_remove(struct http_conn *c)
{
	struct mr_http *h = c->h;

	if (c->prev)
		c->prev->next = c->next;
	else
		h->oldest = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		h->newest = c->prev;
	c->prev = c->next = NULL;
}

static void list_append(struct http_conn *c)
{
	struct mr_http *h = c->h;

	c->prev = h->newest;
	if (h->newest)
		h->newest->next = c;
	else
		h->oldest = c;
	h->newest = c;
}

/* (Re)starts the deadline of the connection's next request. */
static int start_request(struct http_conn *c)
{
	list_remove(c);
	list_append(c);
	return evtimer_add(c->deadline, &c->h->timeout);
}

/* Whether the client sent bytes this end has not read yet: a connection
 * accepted in a flood may not have had its turn to read its request. */
static int unread(const struct http_conn *c)
{
	int n = 0;

	return ioctl(bufferevent_getfd(c->bev), FIONREAD, &n) == 0 && n > 0;
}

/* 0: part of a request has come (read, not complete), 1: idle with nothing
 * sent, 2: idle with bytes not read yet, 3: being answered. Rank 2 is looked
 * at only when needed: it takes a system call. */
static int eviction_rank(const struct http_conn *c, int look_unread)
{
	if (c->answering)
		return 3;
	if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
		return 0;
	return look_unread && unread(c) ? 2 : 1;
}

static struct http_conn *oldest_of_rank(struct mr_http *h, int rank)
{
	for (struct http_conn *c = h->oldest; c; c = c->next)
		if (eviction_rank(c, rank >= 1) == rank)
			return c;
	return NULL;
}

struct http_conn *mr_http_conn_victim(struct mr_http *h)
{
	for (int rank = 0; rank < 3; rank++) {
		struct http_conn *c = oldest_of_rank(h, rank);

		if (c)
			return c;
	}
	return h->oldest;
}

void mr_http_conn_close(struct http_conn *c, enum mr_http_close why)
{
	list_remove(c);
	if (c->deadline)
		event_free(c->deadline);
	bufferevent_free(c->bev);
	mr_http_count_close(c->h, why);
	free(c);
}

/* Returns 1 when c could not answer and was closed (and freed), else 0. */
static int answer_error(struct http_conn *c, int code)
{
	c->answering = c->close_after = 1;
	if (bufferevent_disable(c->bev, EV_READ) == 0 &&
	    mr_http_answer_error(code, bufferevent_get_output(c->bev)) == 0)
		return 0;
	mr_http_conn_close(c, MR_HTTP_CLOSE_DONE);
	return 1;
}

/* Empty lines before a request are ignored, as RFC 9112 asks. */
static void skip_blank_lines(struct evbuffer *in)
{
	unsigned char ch;

	while (evbuffer_copyout(in, &ch, 1) == 1 && (ch == '\r' || ch == '\n') && evbuffer_drain(in, 1) == 0)
		;
}

/* Answers the request in the input once all of it is there. Returns 1
 * when c was closed (and freed), else 0. */
static int serve(struct http_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct mr_http_request req;
	const char *data;
	size_t len, avail, head;
	int status;

	if (c->answering)
		return 0;
	skip_blank_lines(in);
	len = evbuffer_get_length(in);
	avail = len < HTTP_MAX_HEAD ? len : HTTP_MAX_HEAD;
	data = avail ? (const char *)evbuffer_pullup(in, (ev_ssize_t)avail) : NULL;
	head = data ? mr_http_request_head_end(data, avail) : 0;
	if (!head)
		return len >= HTTP_MAX_HEAD ? answer_error(c, 400) : 0;
	status = mr_http_request_parse(data, head, &req);
	if (status == 0 && req.content_length > HTTP_MAX_BODY)
		status = 413;
	if (status)
		return answer_error(c, status);
	if (len - head < req.content_length)
		return 0; /* the body is still on its way */
	c->answering = 1;
	c->close_after = !req.keep_alive;
	/* req points into the input: answered before it is drained */
	if (mr_http_answer(c->h, &req, c->close_after, bufferevent_get_output(c->bev)) == 0 &&
	    evbuffer_drain(in, head + req.content_length) == 0)
		return 0;
	mr_http_conn_close(c, MR_HTTP_CLOSE_DONE);
	return 1;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	(void)serve(arg); /* closed or not, nothing more to do */
}

/* The answer is out: close, or wait for the next request. */
static void on_write(struct bufferevent *bev, void *arg)
{
	struct http_conn *c = arg;

	(void)bev;
	if (!c->answering)
		return;
	if (c->close_after) {
		mr_http_conn_close(c, MR_HTTP_CLOSE_DONE);
		return;
	}
	c->answering = 0;
	if (start_request(c) != 0) {
		mr_http_conn_close(c, MR_HTTP_CLOSE_DONE);
		return;
	}
	/* a request that came before the answer went out */
	if (serve(c) == 0 && !c->answering && c->eof)
		mr_http_conn_close(c, MR_HTTP_CLOSE_DONE);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct http_conn *c = arg;

	(void)bev;
	/* The client may stop sending once its requests are out: they are still answered. */
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && c->answering) {
		c->eof = 1;
		return;
	}
	mr_http_conn_close(c, MR_HTTP_CLOSE_DONE);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct http_conn *c = arg;
	int idle = !c->answering && evbuffer_get_length(bufferevent_get_input(c->bev)) == 0;

	(void)fd;
	(void)what;
	/* an idle kept-alive connection is simply done; one mid-request ran out */
	mr_http_conn_close(c, idle ? MR_HTTP_CLOSE_DONE : MR_HTTP_CLOSE_TIMEOUT);
}

/* Open connections run before new ones are accepted (see http_listener.c). */
static int serve_first(struct http_conn *c)
{
	if (event_base_get_npriorities(c->h->base) < MR_HTTP_PRIORITIES)
		return 0;
	return bufferevent_priority_set(c->bev, 0);
}

int mr_http_conn_open(struct mr_http *h, int fd)
{
	struct http_conn *c = calloc(1, sizeof(*c));

	if (!c || !(c->bev = bufferevent_socket_new(h->base, fd, BEV_OPT_CLOSE_ON_FREE))) {
		free(c);
		close(fd);
		return -ENOMEM;
	}
	c->h = h;
	list_append(c);
	mr_http_count_open(h);
	c->deadline = evtimer_new(h->base, on_deadline, c);
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, HTTP_READ_HIGH);
	if (!c->deadline || start_request(c) != 0 || serve_first(c) != 0 ||
	    bufferevent_enable(c->bev, EV_READ) != 0) {
		mr_http_conn_close(c, MR_HTTP_CLOSE_DONE);
		return -ENOMEM;
	}
	return 0;
}
