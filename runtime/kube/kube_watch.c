/* kube_watch.c - one list+watch per resource kind and namespace, run by the
 * client's thread: the streams, and their requests started when due, a
 * list in pages of 500 (limit, continue) or a watch from the last
 * resourceVersion seen, with bookmarks. What a finished request means is
 * kube_watch_done.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_internal.h"

#define WATCH_TIMEOUT_S 600
#define LIST_TIMEOUT_MS 60000L

static int add_stream(struct mr_kube *k, uint32_t kind, const char *ns, size_t nslen)
{
	struct kube_stream *st = &k->streams[k->nstreams];
	const char *res = kind == KUBE_POD ? "pods" : "services";
	int n = nslen ? asprintf(&st->path, "/api/v1/namespaces/%.*s/%s", (int)nslen, ns, res)
		      : asprintf(&st->path, "/api/v1/%s", res);

	if (n < 0) {
		st->path = NULL;
		return -ENOMEM;
	}
	st->k = k;
	st->xfer = (struct kube_xfer){ .get = 0, .owner = st };
	st->index = k->nstreams++;
	st->kind = kind;
	st->phase = PHASE_LIST;
	st->generation = 1;
	return 0;
}

int mr_kube_streams_init(struct mr_kube *k, const char *namespaces)
{
	const char *p = namespaces ? namespaces : "";
	uint32_t n = 2;
	int rc = 0;

	for (const char *c = p; *c; c++)
		n += *c == ',';
	k->streams = calloc(n, sizeof(*k->streams));
	if (!k->streams)
		return -ENOMEM;
	while (rc == 0 && *p) {
		size_t skip = strspn(p, " \t"), len;

		p += skip;
		len = strcspn(p, ",");
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len > 0)
			rc = add_stream(k, KUBE_POD, p, len);
		p += strcspn(p, ",");
		p += *p == ',';
	}
	if (rc == 0 && k->nstreams == 0)
		rc = add_stream(k, KUBE_POD, "", 0);
	return rc ?: add_stream(k, KUBE_SERVICE, "", 0);
}

void mr_kube_stream_end(struct kube_stream *st)
{
	mr_kube_transfer_end(st->k, &st->easy, &st->headers, &st->body);
}

void mr_kube_streams_free(struct mr_kube *k)
{
	for (uint32_t i = 0; i < k->nstreams; i++) {
		mr_kube_stream_end(&k->streams[i]);
		free(k->streams[i].path);
		free(k->streams[i].resource_version);
		free(k->streams[i].continue_token);
	}
	free(k->streams);
	k->streams = NULL;
	k->nstreams = 0;
}

static size_t on_list_data(char *data, size_t size, size_t n, void *arg)
{
	struct kube_stream *st = arg;

	return mr_kube_body_write(&st->body, data, size * n);
}

/* The end of a watch's headers: a 200 is a watch that runs. */
static size_t on_watch_header(char *data, size_t size, size_t n, void *arg)
{
	struct kube_stream *st = arg;
	long http = 0;

	if (size * n == 2 && data[0] == '\r' && data[1] == '\n' &&
	    curl_easy_getinfo(st->easy, CURLINFO_RESPONSE_CODE, &http) == CURLE_OK && http == 200) {
		st->answered = 1;
		st->backoff_ms = 0;
		pthread_mutex_lock(&st->k->lock);
		st->k->status.watches++;
		st->k->status.connected = 1;
		pthread_mutex_unlock(&st->k->lock);
	}
	return size * n;
}

static size_t on_watch_data(char *data, size_t size, size_t n, void *arg)
{
	struct kube_stream *st = arg;
	size_t took = mr_kube_body_write(&st->body, data, size * n);

	st->got_data = 1;
	if (st->answered)
		mr_kube_watch_lines(st);
	return took;
}

static char *query_of(const struct kube_stream *st)
{
	const char *sel = st->kind == KUBE_POD ? st->k->field_selector : NULL;
	char *q = NULL, *cont = NULL;
	int n;

	if (st->continue_token && !(cont = curl_easy_escape(NULL, st->continue_token, 0)))
		return NULL;
	if (st->phase == PHASE_LIST)
		n = asprintf(&q, "%s?limit=%u%s%s%s%s", st->path, st->k->page_limit,
			     sel ? "&fieldSelector=" : "", sel ? sel : "", cont ? "&continue=" : "",
			     cont ? cont : "");
	else
		n = asprintf(&q,
			     "%s?watch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%d%s%s",
			     st->path, st->resource_version, WATCH_TIMEOUT_S, sel ? "&fieldSelector=" : "",
			     sel ? sel : "");
	curl_free(cont);
	return n < 0 ? NULL : q;
}

void mr_kube_stream_wait(struct kube_stream *st, enum kube_phase phase, uint64_t now_ms)
{
	st->backoff_ms = mr_kube_backoff(st->backoff_ms);
	st->wake_at_ms = now_ms + st->backoff_ms;
	st->phase = phase;
}

/* A list page has a deadline; a watch has none, and its headers say when it runs. */
static CURLcode set_phase_opts(struct kube_stream *st)
{
	CURLcode rc = curl_easy_setopt(st->easy, CURLOPT_PRIVATE, &st->xfer);

	if (st->phase == PHASE_LIST)
		return rc ?: curl_easy_setopt(st->easy, CURLOPT_TIMEOUT_MS, LIST_TIMEOUT_MS);
	rc = rc ?: curl_easy_setopt(st->easy, CURLOPT_HEADERFUNCTION, on_watch_header);
	return rc ?: curl_easy_setopt(st->easy, CURLOPT_HEADERDATA, st);
}

static void start(struct kube_stream *st, uint64_t now_ms)
{
	struct mr_kube *k = st->k;
	char *q;

	if (st->phase == PHASE_WATCH && !st->resource_version)
		st->phase = PHASE_LIST;
	q = query_of(st);
	st->answered = st->got_data = st->gone = st->failed = 0;
	st->easy = q ? mr_kube_easy(k, q, &st->headers, st->curl_err,
				    st->phase == PHASE_LIST ? on_list_data : on_watch_data, st)
		     : NULL;
	free(q);
	if (st->easy && set_phase_opts(st) == CURLE_OK &&
	    curl_multi_add_handle(k->multi, st->easy) == CURLM_OK)
		return;
	mr_kube_easy_free(st->easy, st->headers);
	st->easy = NULL;
	st->headers = NULL;
	pthread_mutex_lock(&k->lock);
	mr_kube_note_error(k, "cannot start a request for %s: out of memory", st->path);
	pthread_mutex_unlock(&k->lock);
	mr_kube_stream_wait(st, st->phase, now_ms);
}

uint64_t mr_kube_streams_tick(struct mr_kube *k, uint64_t now_ms, uint64_t max_ms)
{
	uint64_t next = max_ms;

	for (uint32_t i = 0; i < k->nstreams; i++) {
		struct kube_stream *st = &k->streams[i];

		if (st->easy)
			continue;
		if (st->wake_at_ms > now_ms) {
			next = st->wake_at_ms - now_ms < next ? st->wake_at_ms - now_ms : next;
			continue;
		}
		start(st, now_ms);
	}
	return next;
}
