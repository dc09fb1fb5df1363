/* kube_watch_done.c - what a finished request of a list+watch stream
 * means: a list page's items go to the store (the last page sweeps what
 * the list no longer has, then the watch starts); 410 Gone (HTTP or a
 * watch's ERROR event) lists again at once; a dropped watch or a failed
 * request waits, 0.5 s doubling up to 30 s, then watches again from the
 * last version seen (a version the server no longer has then answers 410). */
#include <errno.h>
#include <stdlib.h>

#include "kube/kube_internal.h"

/* Every stream of kind has a full list in: SYNCED, once. */
static void note_synced(struct mr_kube *k, uint32_t kind)
{
	for (uint32_t i = 0; i < k->nstreams; i++)
		if (k->streams[i].kind == kind && !k->streams[i].listed)
			return;
	if (mr_kube_store_synced(&k->store, kind) != 0)
		mr_kube_note_error(k, "out of memory");
}

/* A list page came in whole, lock not held. */
static void page_done(struct kube_stream *st, uint64_t now_ms)
{
	struct mr_kube *k = st->k;
	int rc = mr_kube_list_page(st);

	pthread_mutex_lock(&k->lock);
	k->status.connected = 1;
	if (rc != 0) {
		mr_kube_note_error(k, "list of %s: %s", st->path,
				   rc == -ENOMEM ? "out of memory" : "the answer is not a list");
		st->generation++;
		free(st->continue_token);
		st->continue_token = NULL;
		mr_kube_stream_wait(st, PHASE_LIST, now_ms);
	} else if (!st->continue_token) {
		if (mr_kube_store_sweep(&k->store, st->index, st->generation) != 0)
			mr_kube_note_error(k, "list of %s: out of memory", st->path);
		st->listed = 1;
		st->generation++;
		k->status.lists++;
		note_synced(k, st->kind);
		st->backoff_ms = 0;
		st->phase = PHASE_WATCH;
	}
	pthread_mutex_unlock(&k->lock);
}

/* The list starts again from its first page, at once (410) or later. */
static void relist(struct kube_stream *st, int gone, uint64_t now_ms)
{
	free(st->continue_token);
	st->continue_token = NULL;
	free(st->resource_version);
	st->resource_version = NULL;
	st->generation++;
	st->phase = PHASE_LIST;
	if (gone)
		st->k->status.relists_gone++;
	else
		mr_kube_stream_wait(st, PHASE_LIST, now_ms);
}

/* What a finished transfer means, lock held. */
static void finished(struct kube_stream *st, CURLcode rc, long http, uint64_t now_ms)
{
	struct mr_kube *k = st->k;
	char why[256];

	k->status.connected = rc == CURLE_OK || st->answered;
	if (http == 410 || st->gone) {
		relist(st, 1, now_ms);
	} else if (rc == CURLE_OK && http == 200 && st->phase == PHASE_WATCH) {
		/* Ended cleanly: watched again at once, unless it failed or
		 * brought nothing (a server that ends every watch at once
		 * would otherwise keep this thread busy). */
		k->status.watch_drops++;
		if (st->failed || !st->got_data)
			mr_kube_stream_wait(st, PHASE_WATCH, now_ms);
	} else if (rc != CURLE_OK && http == 200 && st->phase == PHASE_WATCH) {
		k->status.watch_drops++;
		mr_kube_stream_wait(st, PHASE_WATCH, now_ms);
	} else {
		mr_kube_failure(k, why, sizeof(why), rc, http, st->curl_err, &st->body);
		mr_kube_note_error(k, "%s of %s: %s", st->phase == PHASE_LIST ? "list" : "watch", st->path,
				   why);
		if (http == 401)
			mr_kube_token_refresh(k, 1);
		if (st->phase == PHASE_LIST)
			relist(st, 0, now_ms);
		else
			mr_kube_stream_wait(st, PHASE_WATCH, now_ms);
	}
}

void mr_kube_stream_done(struct kube_stream *st, CURLcode rc)
{
	uint64_t now_ms = mr_kube_now_ms();
	long http = 0;

	if (curl_easy_getinfo(st->easy, CURLINFO_RESPONSE_CODE, &http) != CURLE_OK)
		http = 0;
	if (rc == CURLE_OK && http == 200 && st->phase == PHASE_LIST) {
		page_done(st, now_ms);
	} else {
		pthread_mutex_lock(&st->k->lock);
		finished(st, rc, http, now_ms);
		pthread_mutex_unlock(&st->k->lock);
	}
	mr_kube_stream_end(st);
}
