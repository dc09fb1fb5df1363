/* kube_internal.h - the Kubernetes client's private layout: the client, its
 * list+watch streams (one per resource kind and namespace), the object store
 * with its change log, and the cache of single objects. Everything below
 * `lock` is shared between the client's thread and its callers. */
#ifndef MR_KUBE_KUBE_INTERNAL_H
#define MR_KUBE_KUBE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <curl/curl.h>

#include "api_test.h"

struct json_object;
struct mr_string_map;

enum kube_kind { KUBE_POD = 0, KUBE_SERVICE = 1, KUBE_KINDS = 2 };

/* One object as the store keeps it: its JSON text without managedFields. */
struct kube_object {
	char *uid;
	char *json;
	char *resource_version;
	size_t slot;         /* its index in the store's array */
	uint32_t stream;     /* the stream that listed or watched it */
	uint32_t kind;       /* enum kube_kind */
	uint64_t generation; /* the stream's list generation that saw it last */
};

/* One change: ADDED, MODIFIED, DELETED (json is the object) or SYNCED. */
struct kube_change {
	uint64_t seq;
	uint32_t kind;
	const char *type;
	char *json; /* NULL for SYNCED */
	size_t len; /* strlen(json), 0 for SYNCED */
};

struct kube_store {
	struct mr_string_map *by_uid; /* uid -> struct kube_object */
	struct kube_object **objects;
	size_t nobjects, cap_objects;
	struct kube_change *log; /* oldest first, seq contiguous */
	size_t nlog, cap_log;
	size_t log_bytes; /* the text of the changes in the log */
	size_t log_limit; /* the changes a trim keeps (fewer past LOG_BYTES_KEEP) */
	uint64_t next_seq;
	int synced[KUBE_KINDS];
	uint64_t counts[KUBE_KINDS];
};

enum kube_phase { PHASE_LIST, PHASE_WATCH };

/* A response body being received: the whole of it (lists, gets) or, for a
 * watch, what is left of its last unfinished line. */
struct kube_body {
	char *data;
	size_t len, cap;
	int too_big;
};

struct mr_kube;

/* What a transfer's CURLOPT_PRIVATE points to: a stream's or a GET's. */
struct kube_xfer {
	int get;
	void *owner;
};

/* One list+watch of one kind, in one namespace or all. */
struct kube_stream {
	struct mr_kube *k;
	struct kube_xfer xfer;
	uint32_t index;
	uint32_t kind;
	char *path;                 /* "/api/v1/namespaces/NS/pods" or "/api/v1/services" */
	enum kube_phase phase;      /* of the request in flight or next */
	CURL *easy;                 /* the request in flight, or NULL */
	int answered;               /* its response began (HTTP 200 for a watch) */
	int got_data;               /* a watch's body brought something */
	int failed;                 /* a watch's ERROR event (not 410) */
	struct curl_slist *headers; /* its headers */
	struct kube_body body;
	char curl_err[CURL_ERROR_SIZE];
	char *resource_version; /* where the next watch starts, or NULL */
	char *continue_token;   /* the next page of a list, or NULL */
	uint64_t generation;    /* of the list in progress */
	int gone;               /* a watch event said 410: list again */
	int listed;             /* a full list is in */
	uint32_t backoff_ms;    /* the last wait after a failure (0: none yet) */
	uint64_t wake_at_ms;    /* when the next request may start */
};

/* A single object fetched by path: the last answer, kept and served while
 * it is fetched again. */
enum kube_get_answer { GET_NONE, GET_OK, GET_NOT_FOUND, GET_FAILED };

struct kube_get_entry {
	char *path;
	enum kube_get_answer last;
	int queued;           /* to be fetched */
	int fetching;         /* the thread's transfer runs */
	char *json;           /* GET_OK's object */
	uint64_t done_at_ms;  /* when it was last answered */
	uint64_t asked_at_ms; /* when mr_kube_get last asked for it */
	uint64_t retry_at_ms; /* GET_FAILED: when to try again */
	uint32_t backoff_ms;  /* after the last failure */
	struct mr_kube *k;
	struct kube_xfer xfer;
	CURL *easy; /* the thread's, with the three below */
	struct curl_slist *headers;
	struct kube_body body;
	char curl_err[CURL_ERROR_SIZE];
};

struct kube_gets {
	struct mr_string_map *by_path; /* path -> struct kube_get_entry */
	struct kube_get_entry **entries;
	size_t n, cap;
};

struct mr_kube {
	char *server, *token_file, *node_name, *field_selector;
	char *ca_pem, *cert_pem, *key_pem;
	CURLM *multi;
	pthread_t thread;
	int started;
	struct kube_stream *streams;
	uint32_t nstreams;
	uint32_t page_limit; /* items a list page asks for */

	pthread_mutex_t lock;
	int stopping;
	char *token;               /* the bearer token in use, or NULL */
	uint64_t token_checked_ms; /* when token_file was last looked at */
	struct timespec token_mtime;
	off_t token_size;
	ino_t token_ino;
	struct kube_store store;
	struct kube_gets gets;
	struct mr_kube_status status;
};

/* kube_thread.c: the client's thread. */
void *mr_kube_thread_main(void *arg);

/* kube_request.c: a new easy handle for GET path (with its query), its
 * Authorization header made from the current token, writing into body. */
CURL *mr_kube_easy(struct mr_kube *k, const char *path_query, struct curl_slist **headers, char *curl_err,
		   size_t (*write)(char *, size_t, size_t, void *), void *arg);
void mr_kube_easy_free(CURL *easy, struct curl_slist *headers);
/* Ends a transfer of the client's multi handle when one runs (*easy not
 * NULL): removed, freed with its headers, its body emptied. */
void mr_kube_transfer_end(struct mr_kube *k, CURL **easy, struct curl_slist **headers,
			  struct kube_body *body);
/* Notes an answer (connected) or a failure (counted, last_error); lock held. */
void mr_kube_note_error(struct mr_kube *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The message of a finished transfer of k that failed (curl code or HTTP status). */
void mr_kube_failure(const struct mr_kube *k, char *out, size_t len, CURLcode rc, long http,
		     const char *curl_err, const struct kube_body *body);
uint64_t mr_kube_now_ms(void);
/* The next wait after a failure: 0.5 s, then doubled, up to 30 s. */
uint32_t mr_kube_backoff(uint32_t last_ms);

/* kube_body.c: appends to a body (kept up to a limit, too_big past it). */
size_t mr_kube_body_write(struct kube_body *b, const char *data, size_t len);
void mr_kube_body_reset(struct kube_body *b);

/* kube_token.c: re-reads token_file when it changed (at most once a second,
 * or now when force); lock held. */
void mr_kube_token_refresh(struct mr_kube *k, int force);

/* kube_store.c: the objects and the change log; lock held for each. */
int mr_kube_store_init(struct kube_store *s);
void mr_kube_store_free(struct kube_store *s);
/* Adds or replaces an object from its JSON (managedFields dropped): ADDED or
 * MODIFIED in the log when new or of another resourceVersion. */
int mr_kube_store_upsert(struct kube_store *s, uint32_t kind, uint32_t stream, uint64_t generation,
			 struct json_object *obj);
/* Removes the object of uid (DELETED with obj's state, or the last kept). */
int mr_kube_store_delete(struct kube_store *s, struct json_object *obj);
/* Removes every object of stream not seen by generation (DELETED each). */
int mr_kube_store_sweep(struct kube_store *s, uint32_t stream, uint64_t generation);
/* A SYNCED record for kind, the first time. */
int mr_kube_store_synced(struct kube_store *s, uint32_t kind);
/* "pod" or "service". */
const char *mr_kube_kind_name(uint32_t kind);
/* kube_changes.c: mr_kube_changes's answer from the store. */
int64_t mr_kube_store_changes(struct kube_store *s, uint64_t *cursor, char *buf, size_t cap);
/* kube_json.c: obj as JSON text without metadata.managedFields (malloc'd). */
char *mr_kube_json_text(struct json_object *obj);
const char *mr_kube_json_meta(struct json_object *obj, const char *field);

/* kube_watch.c: the streams, driven by the thread. */
int mr_kube_streams_init(struct mr_kube *k, const char *namespaces);
void mr_kube_streams_free(struct mr_kube *k);
/* Starts what is due; the milliseconds until the next is due (at most max_ms). */
uint64_t mr_kube_streams_tick(struct mr_kube *k, uint64_t now_ms, uint64_t max_ms);
/* Ends the stream's transfer and frees what it held. */
void mr_kube_stream_end(struct kube_stream *st);
/* The stream waits (the next backoff) before its next request, of phase. */
void mr_kube_stream_wait(struct kube_stream *st, enum kube_phase phase, uint64_t now_ms);
/* kube_watch_done.c: a transfer of a stream ended. */
void mr_kube_stream_done(struct kube_stream *st, CURLcode rc);
/* kube_events.c: a list page's items and a watch's event lines, into the
 * store (lock taken inside). A page: 0, or -EINVAL when it is no list. */
int mr_kube_list_page(struct kube_stream *st);
/* Applies the complete lines of st->body and keeps the rest. */
void mr_kube_watch_lines(struct kube_stream *st);

/* kube_get.c: the single-object cache. */
int mr_kube_gets_init(struct kube_gets *g);
void mr_kube_gets_free(struct mr_kube *k);
/* Starts the queued GETs (lock taken inside). */
void mr_kube_gets_tick(struct mr_kube *k);
void mr_kube_get_done(struct kube_get_entry *e, CURLcode rc);

#endif
