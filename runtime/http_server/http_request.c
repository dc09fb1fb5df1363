/* http_request.c - parsing a request head (see http_request.h). */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "http_server/http_request.h"

/* More digits than this is a length no endpoint accepts. */
#define MAX_LENGTH_DIGITS 18

enum { BAD = 400, NOT_IMPLEMENTED = 501, BAD_VERSION = 505 };

struct cursor {
	const char *p, *end;
};

/* The next line, without its line end; -EINVAL at the end or for a bare CR. */
static int next_line(struct cursor *c, const char **line, size_t *len)
{
	const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
	size_t n;

	if (!nl)
		return -EINVAL;
	n = (size_t)(nl - c->p);
	if (n > 0 && c->p[n - 1] == '\r')
		n--;
	if (memchr(c->p, '\r', n))
		return -EINVAL;
	*line = c->p;
	*len = n;
	c->p = nl + 1;
	return 0;
}

static int is_tchar(unsigned char ch)
{
	return ch && (isalnum(ch) || strchr("!#$%&'*+-.^_`|~", ch));
}

static size_t token_len(const char *s, size_t len)
{
	size_t n = 0;

	while (n < len && is_tchar((unsigned char)s[n]))
		n++;
	return n;
}

static int same_ci(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && strncasecmp(s, word, len) == 0;
}

/* The path of an origin-form target (/p?q), an absolute-form one
 * (http://host/p?q), or "*". */
static int parse_target(const char *t, size_t len, struct mr_http_request *req)
{
	size_t skip = len > 7 && strncasecmp(t, "http://", 7) == 0    ? 7
		      : len > 8 && strncasecmp(t, "https://", 8) == 0 ? 8
								      : 0;

	for (size_t i = 0; i < len; i++)
		if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
			return BAD;
	if (skip) {
		const char *slash = memchr(t + skip, '/', len - skip);

		if (!slash) {
			req->path = "/";
			req->path_len = 1;
			return 0;
		}
		len -= (size_t)(slash - t);
		t = slash;
	}
	if (t[0] != '/' && !(len == 1 && t[0] == '*'))
		return BAD;
	req->path = t;
	req->path_len = 0;
	while (req->path_len < len && t[req->path_len] != '?' && t[req->path_len] != '#')
		req->path_len++;
	return 0;
}

/* METHOD SP TARGET SP HTTP/1.x; *minor receives x. */
static int parse_request_line(const char *line, size_t len, struct mr_http_request *req, int *minor)
{
	size_t m = token_len(line, len), tlen;
	const char *target, *sp, *v;
	int rc;

	if (m == 0 || m >= len || line[m] != ' ')
		return BAD;
	/* methods are case-sensitive */
	req->method = m == 3 && memcmp(line, "GET", 3) == 0    ? MR_HTTP_GET
		      : m == 4 && memcmp(line, "HEAD", 4) == 0 ? MR_HTTP_HEAD
							       : MR_HTTP_OTHER;
	target = line + m + 1;
	sp = memchr(target, ' ', len - m - 1);
	if (!sp || sp == target)
		return BAD;
	tlen = (size_t)(sp - target);
	rc = parse_target(target, tlen, req);
	if (rc)
		return rc;
	v = sp + 1;
	if ((size_t)(line + len - v) != 8 || memcmp(v, "HTTP/", 5) != 0 || !isdigit((unsigned char)v[5]) ||
	    v[6] != '.' || !isdigit((unsigned char)v[7]))
		return BAD;
	if (v[5] != '1')
		return BAD_VERSION;
	*minor = v[7] - '0';
	return 0;
}

static int parse_length(const char *v, size_t len, struct mr_http_request *req, int *seen)
{
	uint64_t n = 0;

	if (len == 0)
		return BAD;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)v[i]))
			return BAD;
		if (i < MAX_LENGTH_DIGITS)
			n = n * 10 + (uint64_t)(v[i] - '0');
		else
			n = UINT64_MAX;
	}
	if (*seen && n != req->content_length)
		return BAD;
	*seen = 1;
	req->content_length = n;
	return 0;
}

/* The Connection header's options: close, keep-alive. */
static void parse_connection(const char *v, size_t len, int *close, int *keep)
{
	size_t i = 0;

	while (i < len) {
		size_t t = token_len(v + i, len - i);

		*close |= same_ci(v + i, t, "close");
		*keep |= same_ci(v + i, t, "keep-alive");
		i += t ? t : 1; /* a separator */
	}
}

struct header_state {
	int seen_length, close, keep;
};

static int parse_header(const char *line, size_t len, struct mr_http_request *req, struct header_state *st)
{
	size_t n = token_len(line, len);
	const char *v;
	size_t vlen;

	if (n == 0 || n >= len || line[n] != ':')
		return BAD; /* also a folded line, which starts with a space */
	v = line + n + 1;
	vlen = len - n - 1;
	while (vlen > 0 && (*v == ' ' || *v == '\t'))
		v++, vlen--;
	while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	for (size_t i = 0; i < vlen; i++)
		if (((unsigned char)v[i] < 0x20 && v[i] != '\t') || (unsigned char)v[i] == 0x7f)
			return BAD;
	if (same_ci(line, n, "content-length"))
		return parse_length(v, vlen, req, &st->seen_length);
	if (same_ci(line, n, "transfer-encoding"))
		return NOT_IMPLEMENTED;
	if (same_ci(line, n, "connection"))
		parse_connection(v, vlen, &st->close, &st->keep);
	return 0;
}

size_t mr_http_request_head_end(const char *buf, size_t len)
{
	for (const char *nl = memchr(buf, '\n', len); nl;
	     nl = memchr(nl + 1, '\n', len - (size_t)(nl + 1 - buf))) {
		size_t at = (size_t)(nl - buf) + 1;

		if (at < len && buf[at] == '\n')
			return at + 1;
		if (at + 1 < len && buf[at] == '\r' && buf[at + 1] == '\n')
			return at + 2;
	}
	return 0;
}

int mr_http_request_parse(const char *head, size_t len, struct mr_http_request *req)
{
	struct cursor c = { head, head + len };
	struct header_state st = { 0 };
	const char *line;
	size_t n;
	int minor = 0, rc;

	memset(req, 0, sizeof(*req));
	if (next_line(&c, &line, &n) != 0)
		return BAD;
	rc = parse_request_line(line, n, req, &minor);
	while (rc == 0) {
		if (next_line(&c, &line, &n) != 0)
			return BAD;
		if (n == 0)
			break;
		rc = parse_header(line, n, req, &st);
	}
	if (rc)
		return rc;
	req->keep_alive = minor >= 1 ? !st.close : st.keep && !st.close;
	return 0;
}
