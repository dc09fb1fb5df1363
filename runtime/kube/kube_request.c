/* kube_request.c - one libcurl easy handle per request to the Kubernetes
 * API server: HTTPS only with TLS verification always on (the CA, client
 * certificate and key given as PEM text), HTTP/1.1, the bearer token header
 * from the current token; and a failed request put in one line. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "base/log.h"
#include "base/string_map.h"
#include "kube/kube_internal.h"

#define CONNECT_TIMEOUT_MS 10000L
#define USER_AGENT "moonrover/" MR_VERSION

uint64_t mr_kube_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint32_t mr_kube_backoff(uint32_t last_ms)
{
	if (last_ms == 0)
		return 500;
	return last_ms >= 15000 ? 30000 : last_ms * 2;
}

void mr_kube_note_error(struct mr_kube *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(k->status.last_error, sizeof(k->status.last_error), fmt, ap);
	va_end(ap);
	k->status.errors++;
}

static void status_message(char *out, size_t len, const struct kube_body *body)
{
	struct json_object *doc, *msg;

	out[0] = 0;
	if (!body->data || body->len == 0)
		return;
	doc = json_tokener_parse(body->data);
	if (doc && json_object_object_get_ex(doc, "message", &msg) &&
	    json_object_is_type(msg, json_type_string))
		snprintf(out, len, ": %s", json_object_get_string(msg));
	json_object_put(doc);
}

/* Whether a transfer with a client certificate ended in TLS before any
 * answer: what a server that does not trust the certificate does. It sends
 * an alert and closes; with TLS 1.3 the client sees it only after its side
 * of the handshake, often as a reset connection rather than the alert. */
static int refused_client_cert(const struct mr_kube *k, CURLcode rc, long http)
{
	return k->cert_pem && http == 0 &&
	       (rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR);
}

void mr_kube_failure(const struct mr_kube *k, char *out, size_t len, CURLcode rc, long http,
		     const char *curl_err, const struct kube_body *body)
{
	const char *why = curl_err && *curl_err ? curl_err : curl_easy_strerror(rc);
	char msg[160];

	if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
		snprintf(out, len, "TLS verification of the API server failed: %s", why);
		return;
	}
	if (rc == CURLE_SSL_CERTPROBLEM) {
		snprintf(out, len, "the client certificate or its key cannot be used: %s", why);
		return;
	}
	if (refused_client_cert(k, rc, http)) {
		snprintf(out, len,
			 "the API server closed the connection in TLS, as it does for a client certificate "
			 "it does not trust: %s",
			 why);
		return;
	}
	if (rc != CURLE_OK) {
		snprintf(out, len, "cannot reach the API server: %s", why);
		return;
	}
	status_message(msg, sizeof(msg), body);
	if (http == 401)
		snprintf(out, len, "the API server refused the credentials (401 Unauthorized)%s", msg);
	else if (http == 403)
		snprintf(out, len, "the API server forbids it (403 Forbidden)%s", msg);
	else
		snprintf(out, len, "the API server answered HTTP %ld%s", http, msg);
}

static struct curl_slist *headers_of(struct mr_kube *k)
{
	struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json"), *next;
	char *auth = NULL;
	int has_token;

	if (!h)
		return NULL;
	pthread_mutex_lock(&k->lock);
	mr_kube_token_refresh(k, 0);
	has_token = k->token != NULL;
	if (has_token && asprintf(&auth, "Authorization: Bearer %s", k->token) < 0)
		auth = NULL;
	pthread_mutex_unlock(&k->lock);
	if (!auth) {
		if (!has_token)
			return h;
		curl_slist_free_all(h);
		return NULL;
	}
	next = curl_slist_append(h, auth);
	free(auth);
	if (!next)
		curl_slist_free_all(h);
	return next;
}

static CURLcode set_blob(CURL *e, CURLoption opt, const char *pem)
{
	struct curl_blob blob = { .data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY };

	return curl_easy_setopt(e, opt, &blob);
}

static CURLcode set_tls(struct mr_kube *k, CURL *e)
{
	CURLcode rc = curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);

	rc = rc ?: curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	if (k->ca_pem)
		rc = rc ?: set_blob(e, CURLOPT_CAINFO_BLOB, k->ca_pem);
	if (k->cert_pem) {
		rc = rc ?: set_blob(e, CURLOPT_SSLCERT_BLOB, k->cert_pem);
		rc = rc ?: curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
	}
	if (k->key_pem) {
		rc = rc ?: set_blob(e, CURLOPT_SSLKEY_BLOB, k->key_pem);
		rc = rc ?: curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
	}
	return rc;
}

CURL *mr_kube_easy(struct mr_kube *k, const char *path_query, struct curl_slist **headers, char *curl_err,
		   size_t (*write)(char *, size_t, size_t, void *), void *arg)
{
	CURL *e = curl_easy_init();
	char *url = NULL;
	CURLcode rc;

	*headers = NULL;
	if (!e || asprintf(&url, "%s%s", k->server, path_query) < 0) {
		if (e)
			curl_easy_cleanup(e);
		return mr_fail_null(-ENOMEM);
	}
	*headers = headers_of(k);
	curl_err[0] = 0;
	rc = *headers ? CURLE_OK : CURLE_OUT_OF_MEMORY;
	rc = rc ?: curl_easy_setopt(e, CURLOPT_URL, url);
	rc = rc ?: curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
	rc = rc ?: curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	rc = rc ?: curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	rc = rc ?: curl_easy_setopt(e, CURLOPT_ERRORBUFFER, curl_err);
	rc = rc ?: curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	rc = rc ?: curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	rc = rc ?: curl_easy_setopt(e, CURLOPT_USERAGENT, USER_AGENT);
	rc = rc ?: curl_easy_setopt(e, CURLOPT_HTTPHEADER, *headers);
	rc = rc ?: curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write);
	rc = rc ?: curl_easy_setopt(e, CURLOPT_WRITEDATA, arg);
	rc = rc ?: set_tls(k, e);
	free(url);
	if (rc != CURLE_OK) {
		mr_kube_easy_free(e, *headers);
		*headers = NULL;
		return mr_fail_null(rc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EINVAL);
	}
	return e;
}

void mr_kube_easy_free(CURL *easy, struct curl_slist *headers)
{
	if (easy)
		curl_easy_cleanup(easy);
	curl_slist_free_all(headers);
}

void mr_kube_transfer_end(struct mr_kube *k, CURL **easy, struct curl_slist **headers, struct kube_body *body)
{
	if (!*easy)
		return;
	if (curl_multi_remove_handle(k->multi, *easy) != CURLM_OK)
		mr_log(MR_LEVEL_WARN, "kube",
		       "libcurl kept a finished transfer: its memory is freed all the same");
	mr_kube_easy_free(*easy, *headers);
	*easy = NULL;
	*headers = NULL;
	mr_kube_body_reset(body);
}
