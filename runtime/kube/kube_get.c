/* kube_get.c - single objects by API path (a pod's owners): the first ask
 * queues a GET and answers "not yet"; the answer is then kept, an object
 * or a 404, and fetched again after 10 minutes while the old one is still
 * served; another failure is retried after a backoff. A path nobody asked
 * for in 30 minutes is forgotten (owners come and go with rollouts). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "base/grow_array.h"
#include "base/string_map.h"
#include "kube/kube_internal.h"

#define REFRESH_MS (10u * 60u * 1000u)
#define FORGET_MS (30u * 60u * 1000u)
#define GETS_AT_ONCE 4

int mr_kube_gets_init(struct kube_gets *g)
{
	memset(g, 0, sizeof(*g));
	g->by_path = mr_string_map_new(NULL);
	return g->by_path ? 0 : -ENOMEM;
}

static void end_transfer(struct mr_kube *k, struct kube_get_entry *e)
{
	mr_kube_transfer_end(k, &e->easy, &e->headers, &e->body);
}

static void free_entry(struct mr_kube *k, struct kube_get_entry *e)
{
	end_transfer(k, e);
	free(e->path);
	free(e->json);
	free(e);
}

void mr_kube_gets_free(struct mr_kube *k)
{
	struct kube_gets *g = &k->gets;

	for (size_t i = 0; i < g->n; i++)
		free_entry(k, g->entries[i]);
	free(g->entries);
	mr_string_map_free(g->by_path);
	memset(g, 0, sizeof(*g));
}

static struct kube_get_entry *add_entry(struct mr_kube *k, const char *path)
{
	struct kube_gets *g = &k->gets;
	struct kube_get_entry **grown = mr_grow_array(g->entries, &g->cap, g->n + 1, sizeof(*grown));
	struct kube_get_entry *e = grown ? calloc(1, sizeof(*e)) : NULL;

	if (grown)
		g->entries = grown;
	if (!e || !(e->path = strdup(path)) || mr_string_map_put(g->by_path, path, e) != 0) {
		if (e)
			free(e->path);
		free(e);
		return NULL;
	}
	e->k = k;
	e->xfer = (struct kube_xfer){ .get = 1, .owner = e };
	g->entries[g->n++] = e;
	return e;
}

static int due(const struct kube_get_entry *e, uint64_t now)
{
	if (e->queued || e->fetching || now < e->retry_at_ms)
		return 0;
	if (e->last == GET_FAILED)
		return 1;
	return e->last == GET_NONE || now - e->done_at_ms >= REFRESH_MS;
}

static int64_t answer(const struct kube_get_entry *e, char *buf, size_t cap)
{
	size_t len;

	switch (e->last) {
	case GET_NONE:
		return 0;
	case GET_NOT_FOUND:
		errno = ENOENT;
		return -1;
	case GET_FAILED:
		errno = EIO;
		return -1;
	case GET_OK:
		break;
	}
	len = strlen(e->json);
	if (len >= cap) {
		errno = ENOBUFS;
		return -1;
	}
	memcpy(buf, e->json, len + 1);
	return (int64_t)len;
}

int64_t mr_kube_get(struct mr_kube *k, const char *path, char *buf, size_t cap)
{
	struct kube_get_entry *e;
	int wake = 0;
	int64_t n;

	if (!path || path[0] != '/' || strpbrk(path, "?# \t\r\n")) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&k->lock);
	e = mr_string_map_get(k->gets.by_path, path);
	if (!e && !(e = add_entry(k, path))) {
		pthread_mutex_unlock(&k->lock);
		errno = ENOMEM;
		return -1;
	}
	e->asked_at_ms = mr_kube_now_ms();
	if (due(e, e->asked_at_ms))
		e->queued = wake = 1;
	n = answer(e, buf, cap);
	pthread_mutex_unlock(&k->lock);
	if (wake && curl_multi_wakeup(k->multi) != CURLM_OK) {
		errno = EIO;
		return -1;
	}
	return n;
}

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct kube_get_entry *e = arg;

	return mr_kube_body_write(&e->body, data, size * n);
}

/* The GET failed: asked again after the next backoff; lock held. */
static void failed(struct kube_get_entry *e, uint64_t now)
{
	e->backoff_ms = mr_kube_backoff(e->backoff_ms);
	e->retry_at_ms = now + e->backoff_ms;
	if (e->last != GET_OK)
		e->last = GET_FAILED;
}

static void start(struct mr_kube *k, struct kube_get_entry *e)
{
	e->easy = mr_kube_easy(k, e->path, &e->headers, e->curl_err, on_data, e);
	if (e->easy && curl_easy_setopt(e->easy, CURLOPT_PRIVATE, &e->xfer) == CURLE_OK &&
	    curl_easy_setopt(e->easy, CURLOPT_TIMEOUT_MS, 30000L) == CURLE_OK &&
	    curl_multi_add_handle(k->multi, e->easy) == CURLM_OK)
		return;
	mr_kube_easy_free(e->easy, e->headers);
	e->easy = NULL;
	e->headers = NULL;
	pthread_mutex_lock(&k->lock);
	e->fetching = 0;
	mr_kube_note_error(k, "cannot start a request for %s: out of memory", e->path);
	failed(e, mr_kube_now_ms());
	pthread_mutex_unlock(&k->lock);
}

/* Drops the entries nobody asked for in FORGET_MS that wait for nothing;
 * lock held. */
static void forget_unasked(struct mr_kube *k, uint64_t now)
{
	struct kube_gets *g = &k->gets;

	for (size_t i = g->n; i-- > 0;) {
		struct kube_get_entry *e = g->entries[i];

		if (e->queued || e->fetching || now - e->asked_at_ms < FORGET_MS)
			continue;
		mr_string_map_take(g->by_path, e->path);
		g->entries[i] = g->entries[--g->n];
		free_entry(k, e);
	}
}

void mr_kube_gets_tick(struct mr_kube *k)
{
	struct kube_get_entry *todo[GETS_AT_ONCE];
	size_t n = 0, busy = 0;

	pthread_mutex_lock(&k->lock);
	forget_unasked(k, mr_kube_now_ms());
	for (size_t i = 0; i < k->gets.n; i++)
		busy += (size_t)k->gets.entries[i]->fetching;
	for (size_t i = 0; i < k->gets.n && busy + n < GETS_AT_ONCE; i++) {
		struct kube_get_entry *e = k->gets.entries[i];

		if (e->queued && !e->fetching) {
			e->queued = 0;
			e->fetching = 1;
			todo[n++] = e;
		}
	}
	pthread_mutex_unlock(&k->lock);
	for (size_t i = 0; i < n; i++)
		start(k, todo[i]);
}

/* A 200's object, without managedFields; NULL when it is not one. */
static char *object_of(const struct kube_body *b)
{
	struct json_object *doc = b->data ? json_tokener_parse(b->data) : NULL;
	char *json = doc && json_object_is_type(doc, json_type_object) ? mr_kube_json_text(doc) : NULL;

	json_object_put(doc);
	return json;
}

void mr_kube_get_done(struct kube_get_entry *e, CURLcode rc)
{
	struct mr_kube *k = e->k;
	uint64_t now = mr_kube_now_ms();
	char *json = NULL, why[256];
	long http = 0;

	if (curl_easy_getinfo(e->easy, CURLINFO_RESPONSE_CODE, &http) != CURLE_OK)
		http = 0;
	if (rc == CURLE_OK && http == 200)
		json = object_of(&e->body);
	else
		mr_kube_failure(k, why, sizeof(why), rc, http, e->curl_err, &e->body);
	pthread_mutex_lock(&k->lock);
	e->fetching = 0;
	k->status.connected = rc == CURLE_OK;
	if (json || http == 404) {
		free(e->json);
		e->json = json;
		e->last = json ? GET_OK : GET_NOT_FOUND;
		e->done_at_ms = now;
		e->retry_at_ms = 0;
		e->backoff_ms = 0;
	} else {
		if (rc == CURLE_OK && http == 200)
			snprintf(why, sizeof(why), "the answer is not an object");
		mr_kube_note_error(k, "GET %s: %s", e->path, why);
		if (http == 401)
			mr_kube_token_refresh(k, 1);
		failed(e, now);
	}
	pthread_mutex_unlock(&k->lock);
	end_transfer(k, e);
}
