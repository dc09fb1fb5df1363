/* http1_scan.c - one scan of an HTTP/1 head for the network tracer's
 * lua/moonrover/net/protocols/http1.lua (declared in api.h): the line ends up
 * to the blank line, and where the values of the headers it reads are.
 *
 * In Lua this was a loop over a head's few lines with exits from inside, and
 * calls to functions that looped over names and digits: loops of a few
 * iterations, often left from inside, that LuaJIT never compiles, so every
 * trace through them aborted. Here it is one call per head. Pure: it reads
 * p[0..n) only, writes only *h, never allocates, never locks. */
#include <string.h>

#include "api.h"

#define CL_MAX_DIGITS 15
#define CASE_BIT 0x20

/* What a header is read for: a trace header's index (MR_HTTP1_SW8...), or one
 * of these. */
enum { KIND_HOST = MR_HTTP1_TRACES, KIND_LENGTH, KIND_CODING };

struct header_name {
	const char *text; /* lowercase */
	int32_t len;
	int32_t kind;
	int32_t in_response; /* also read in a response's head */
};

/* Names compare byte by byte with the case bit set, as the Lua parser did. */
static const struct header_name NAMES[] = {
	{ "content-length", 14, KIND_LENGTH, 1 },
	{ "transfer-encoding", 17, KIND_CODING, 1 },
	{ "host", 4, KIND_HOST, 0 },
	{ "sw8", 3, MR_HTTP1_SW8, 0 },
	{ "traceparent", 11, MR_HTTP1_TRACEPARENT, 0 },
	{ "b3", 2, MR_HTTP1_B3, 0 },
	{ "x-b3-traceid", 12, MR_HTTP1_X_B3_TRACEID, 0 },
};
#define NAME_COUNT ((int32_t)(sizeof(NAMES) / sizeof(NAMES[0])))

int32_t mr_http1_scan_line_end(const uint8_t *p, int32_t from, int32_t n)
{
	if (from < 0 || from >= n)
		return n;
	const uint8_t *lf = memchr(p + from, '\n', (size_t)(n - from));
	return lf ? (int32_t)(lf - p) : n;
}

/* Whether the line p[line..eol) starts with name and a colon. */
static int name_matches(const uint8_t *p, int32_t line, int32_t eol, const struct header_name *name)
{
	int32_t colon = line + name->len;
	if (colon >= eol || p[colon] != ':')
		return 0;
	for (int32_t k = 0; k < name->len; k++) {
		if ((p[line + k] | CASE_BIT) != (uint8_t)name->text[k])
			return 0;
	}
	return 1;
}

static int is_blank(uint8_t c)
{
	return c == ' ' || c == '\t';
}

/* The value of the header line p[line..eol) whose name is name: without the
 * line's CR and the blanks around it. */
static void value_of(const uint8_t *p, int32_t line, int32_t eol, const struct header_name *name,
		     int32_t *from, int32_t *to)
{
	int32_t v = line + name->len + 1, e = eol;
	if (e > v && p[e - 1] == '\r')
		e--;
	while (v < e && is_blank(p[v]))
		v++;
	while (e > v && is_blank(p[e - 1]))
		e--;
	*from = v;
	*to = e;
}

/* Content-Length: 1 to 15 digits, the same in every such header. */
static int64_t content_length(const uint8_t *p, int32_t from, int32_t to, int64_t before)
{
	if (to - from < 1 || to - from > CL_MAX_DIGITS)
		return -2;
	int64_t v = 0;
	for (int32_t k = from; k < to; k++) {
		if (p[k] < '0' || p[k] > '9')
			return -2;
		v = v * 10 + (p[k] - '0');
	}
	return before != -1 && before != v ? -2 : v;
}

/* Transfer-Encoding: 1 when its last coding is chunked, else 2. */
static int32_t coding(const uint8_t *p, int32_t from, int32_t to)
{
	static const char chunked[] = "chunked";
	int32_t len = (int32_t)sizeof(chunked) - 1;
	if (to - from < len)
		return 2;
	for (int32_t k = 0; k < len; k++) {
		if ((p[to - len + k] | CASE_BIT) != (uint8_t)chunked[k])
			return 2;
	}
	if (to - from == len)
		return 1;
	uint8_t c = p[to - len - 1];
	return is_blank(c) || c == ',' ? 1 : 2;
}

/* The name of the header line p[line..eol) among those read, or NULL. The
 * first bytes are compared first: most lines (Server, Date, Accept...) are
 * left after that, without a call per name. */
static const struct header_name *known_name(const uint8_t *p, int32_t line, int32_t eol, int32_t is_request)
{
	uint8_t first = (uint8_t)(p[line] | CASE_BIT);
	for (int32_t k = 0; k < NAME_COUNT; k++) {
		const struct header_name *name = &NAMES[k];
		if ((uint8_t)name->text[0] == first && (is_request || name->in_response) &&
		    name_matches(p, line, eol, name))
			return name;
	}
	return NULL;
}

/* Reads the header line p[line..eol) into h when it is one that is read. */
static void header(const uint8_t *p, int32_t line, int32_t eol, int32_t is_request, struct mr_http1_head *h)
{
	const struct header_name *name = known_name(p, line, eol, is_request);
	if (!name)
		return;
	int32_t from, to;
	value_of(p, line, eol, name, &from, &to);
	if (name->kind == KIND_LENGTH) {
		h->length = content_length(p, from, to, h->length);
	} else if (name->kind == KIND_CODING) {
		h->coding = coding(p, from, to);
	} else if (name->kind == KIND_HOST) {
		h->host = from;
		h->host_end = to;
	} else if (h->trace[name->kind] < 0) {
		h->trace[name->kind] = from;
		h->trace_end[name->kind] = to;
		h->trace_next[name->kind] = eol + 1;
	}
}

void mr_http1_scan_head(const uint8_t *p, int32_t from, int32_t n, int32_t is_request,
			struct mr_http1_head *h)
{
	memset(h, 0, sizeof(*h));
	h->length = -1;
	h->end = MR_HTTP1_INCOMPLETE;
	h->line_end = -1;
	h->host = -1;
	for (int32_t k = 0; k < MR_HTTP1_TRACES; k++)
		h->trace[k] = -1;
	int32_t lf = mr_http1_scan_line_end(p, from, n);
	if (lf >= n)
		return;
	h->line_end = lf;
	for (int32_t line = lf + 1;; line = lf + 1) {
		lf = mr_http1_scan_line_end(p, line, n);
		if (lf >= n)
			return;
		if (p[line] == '\n' || p[line] == '\r') {
			h->end = lf == line || lf == line + 1 ? lf + 1 : MR_HTTP1_MALFORMED;
			return;
		}
		header(p, line, lf, is_request, h);
	}
}

int32_t mr_http1_scan_next(const uint8_t *p, int32_t from, int32_t n, int32_t trace, struct mr_http1_head *h)
{
	if (trace < 0 || trace >= MR_HTTP1_TRACES)
		return -1;
	h->trace[trace] = -1;
	for (int32_t line = from; line >= 0;) {
		int32_t lf = mr_http1_scan_line_end(p, line, n);
		if (lf >= n || p[line] == '\n' || p[line] == '\r')
			return -1;
		const struct header_name *name = known_name(p, line, lf, 1);
		if (name && name->kind == trace) {
			value_of(p, line, lf, name, &h->trace[trace], &h->trace_end[trace]);
			h->trace_next[trace] = lf + 1;
			return h->trace[trace];
		}
		line = lf + 1;
	}
	return -1;
}
