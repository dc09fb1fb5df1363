/* kube_client.c - the Kubernetes API client's lifetime: options copied at
 * open (an https server and a node name required; a token file read once
 * here, so that a bad one fails at once), the node check made before
 * anything is watched, the thread started and joined, and what callers
 * read under the lock (changes, status). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "base/log.h"
#include "base/thread.h"
#include "kube/kube_internal.h"

#define PAGE_LIMIT 500

static int copy_opt(char **to, const char *from)
{
	*to = from ? strdup(from) : NULL;
	return from && !*to ? -ENOMEM : 0;
}

static int copy_opts(struct mr_kube *k, const struct mr_kube_opts *o)
{
	char *node = curl_easy_escape(NULL, o->node_name, 0);
	int rc = node && asprintf(&k->field_selector, "spec.nodeName%%3D%s", node) >= 0 ? 0 : -ENOMEM;

	curl_free(node);
	if (rc != 0)
		k->field_selector = NULL;
	rc = rc ?: copy_opt(&k->server, o->server);
	rc = rc ?: copy_opt(&k->node_name, o->node_name);
	rc = rc ?: copy_opt(&k->token_file, o->token_file && *o->token_file ? o->token_file : NULL);
	rc = rc ?: copy_opt(&k->token, o->token && *o->token && !k->token_file ? o->token : NULL);
	rc = rc ?: copy_opt(&k->ca_pem, o->ca_pem);
	rc = rc ?: copy_opt(&k->cert_pem, o->cert_pem);
	rc = rc ?: copy_opt(&k->key_pem, o->key_pem);
	if (rc == 0 && k->server[strlen(k->server) - 1] == '/')
		k->server[strlen(k->server) - 1] = 0;
	return rc;
}

static int init_parts(struct mr_kube *k, const struct mr_kube_opts *o, char *err, size_t errlen)
{
	int rc = copy_opts(k, o);

	rc = rc ?: mr_kube_store_init(&k->store);
	rc = rc ?: mr_kube_gets_init(&k->gets);
	rc = rc ?: mr_kube_streams_init(k, o->namespaces);
	k->page_limit = PAGE_LIMIT;
	if (rc == 0 && !(k->multi = curl_multi_init()))
		rc = -ENOMEM;
	if (rc != 0)
		return mr_error(err, errlen, rc, "cannot open the Kubernetes client: out of memory");
	if (k->token_file) {
		mr_kube_token_refresh(k, 1);
		if (!k->token)
			return mr_error(err, errlen, -EACCES, "%s", k->status.last_error);
	}
	return 0;
}

struct mr_kube *mr_kube_open(const struct mr_kube_opts *o, char *err, size_t errlen)
{
	struct mr_kube *k;
	int rc;

	if (!o->server || strncmp(o->server, "https://", 8) != 0 || !o->server[8]) {
		mr_error(err, errlen, -EINVAL,
			 "the Kubernetes API server must be an https:// address, not \"%s\"",
			 o->server ? o->server : "");
		return mr_fail_null(-EINVAL);
	}
	if (!o->node_name || !*o->node_name) {
		mr_error(err, errlen, -EINVAL, "the Kubernetes client needs this node's name");
		return mr_fail_null(-EINVAL);
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		mr_error(err, errlen, -ENOMEM, "cannot initialise libcurl");
		return mr_fail_null(-ENOMEM);
	}
	k = calloc(1, sizeof(*k));
	if (!k || pthread_mutex_init(&k->lock, NULL) != 0) {
		free(k);
		curl_global_cleanup();
		mr_error(err, errlen, -ENOMEM, "cannot open the Kubernetes client: out of memory");
		return mr_fail_null(-ENOMEM);
	}
	rc = init_parts(k, o, err, errlen);
	if (rc != 0) {
		mr_kube_close(k);
		return mr_fail_null(rc);
	}
	return k;
}

void mr_kube_close(struct mr_kube *k)
{
	if (!k)
		return;
	if (k->started) {
		pthread_mutex_lock(&k->lock);
		k->stopping = 1;
		pthread_mutex_unlock(&k->lock);
		if (curl_multi_wakeup(k->multi) != CURLM_OK)
			mr_log(MR_LEVEL_WARN, "kube",
			       "cannot wake the client's thread: it stops at its next tick");
		pthread_join(k->thread, NULL);
	}
	mr_kube_streams_free(k);
	if (k->gets.by_path)
		mr_kube_gets_free(k);
	if (k->store.by_uid)
		mr_kube_store_free(&k->store);
	if (k->multi)
		curl_multi_cleanup(k->multi);
	free(k->server);
	free(k->token_file);
	free(k->token);
	free(k->node_name);
	free(k->field_selector);
	free(k->ca_pem);
	free(k->cert_pem);
	free(k->key_pem);
	pthread_mutex_destroy(&k->lock);
	free(k);
	curl_global_cleanup();
}

static size_t on_node_data(char *data, size_t size, size_t n, void *arg)
{
	return mr_kube_body_write(arg, data, size * n);
}

int mr_kube_check_node(struct mr_kube *k, uint32_t timeout_ms, char *err, size_t errlen)
{
	struct kube_body body = { 0 };
	struct curl_slist *headers;
	char curl_err[CURL_ERROR_SIZE], why[256], *path = NULL,
						  *name = curl_easy_escape(NULL, k->node_name, 0);
	CURL *e = NULL;
	CURLcode rc = CURLE_OUT_OF_MEMORY;
	long http = 0;

	if (name && asprintf(&path, "/api/v1/nodes/%s", name) >= 0)
		e = mr_kube_easy(k, path, &headers, curl_err, on_node_data, &body);
	free(path);
	curl_free(name);
	if (!e)
		return mr_error(err, errlen, -ENOMEM,
				"cannot make the request for node \"%s\": out of memory", k->node_name);
	rc = curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	rc = rc ?: curl_easy_perform(e);
	if (rc == CURLE_OK && curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &http) != CURLE_OK)
		http = 0;
	mr_kube_failure(k, why, sizeof(why), rc, http, curl_err, &body);
	mr_kube_easy_free(e, headers);
	mr_kube_body_reset(&body);
	pthread_mutex_lock(&k->lock);
	k->status.connected = rc == CURLE_OK;
	if (rc != CURLE_OK || (http != 200 && http != 404))
		mr_kube_note_error(k, "GET node %s: %s", k->node_name, why);
	if (http == 401)
		mr_kube_token_refresh(k, 1);
	pthread_mutex_unlock(&k->lock);
	if (rc == CURLE_OK && http == 200)
		return 0;
	if (rc == CURLE_OK && http == 404)
		return mr_error(err, errlen, -ENOENT, "node \"%s\" not found", k->node_name);
	return mr_error(err, errlen, -EIO, "cannot get node \"%s\": %s", k->node_name, why);
}

int mr_kube_start(struct mr_kube *k, char *err, size_t errlen)
{
	int rc;

	if (k->started)
		return mr_error(err, errlen, -EBUSY, "the Kubernetes client runs already");
	rc = mr_thread_start(&k->thread, &k->started, "mr-kube", mr_kube_thread_main, k);
	if (!k->started)
		return mr_error(err, errlen, rc, "cannot start the Kubernetes client's thread: %s",
				strerror(-rc));
	return 0;
}

int64_t mr_kube_changes(struct mr_kube *k, uint64_t *cursor, char *buf, size_t cap)
{
	int64_t n;

	pthread_mutex_lock(&k->lock);
	n = mr_kube_store_changes(&k->store, cursor, buf, cap);
	pthread_mutex_unlock(&k->lock);
	return n;
}

void mr_kube_status(struct mr_kube *k, struct mr_kube_status *s)
{
	pthread_mutex_lock(&k->lock);
	*s = k->status;
	s->pods_synced = k->store.synced[KUBE_POD];
	s->services_synced = k->store.synced[KUBE_SERVICE];
	s->objects_pods = k->store.counts[KUBE_POD];
	s->objects_services = k->store.counts[KUBE_SERVICE];
	pthread_mutex_unlock(&k->lock);
}

void mr_kube_set_limits(struct mr_kube *k, uint32_t log_changes, uint32_t page_items)
{
	pthread_mutex_lock(&k->lock);
	if (log_changes)
		k->store.log_limit = log_changes;
	if (page_items)
		k->page_limit = page_items;
	pthread_mutex_unlock(&k->lock);
}
