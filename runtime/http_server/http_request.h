/* http_request.h - the head of an HTTP/1.x request (request line and
 * headers), parsed for the agent's endpoint: method, path, version, body
 * length and whether the connection stays open. Strict where leniency lets
 * a request mean two things (folded lines, two lengths, a body in chunks),
 * and accepting bare LF line ends as most servers do. */
#ifndef MR_HTTP_SERVER_HTTP_REQUEST_H
#define MR_HTTP_SERVER_HTTP_REQUEST_H

#include <stddef.h>
#include <stdint.h>

enum mr_http_method { MR_HTTP_OTHER = 0, MR_HTTP_GET, MR_HTTP_HEAD };

struct mr_http_request {
	enum mr_http_method method;
	const char *path; /* inside the head: the target's path, without the query */
	size_t path_len;
	uint64_t content_length; /* body bytes that follow the head */
	int keep_alive;          /* the client may send another request */
};

/* Where the head at buf ends (just past its blank line), or 0 when the
 * blank line has not come yet. */
size_t mr_http_request_head_end(const char *buf, size_t len);
/* Parses the head (len bytes, up to its blank line). Returns 0, or the
 * status to answer with before closing: 400 (malformed), 501 (a
 * Transfer-Encoding) or 505 (not HTTP/1.x). */
int mr_http_request_parse(const char *head, size_t len, struct mr_http_request *req);

#endif
