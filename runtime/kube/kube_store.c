/* kube_store.c - the objects the watches keep (by uid, as JSON text) and
 * the change log readers follow with a cursor: each change has a sequence
 * number, one after the other; a reader whose cursor fell out of the log
 * gets a RESET and every current object instead. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "base/grow_array.h"
#include "base/string_map.h"
#include "kube/kube_internal.h"

#define LOG_LIMIT 16384
/* The objects' text the log may hold: a trim brings it back under
 * LOG_BYTES_KEEP, so that many large objects (or one changed often) cannot
 * hold more than that, whatever the count. */
#define LOG_BYTES_MAX (64u << 20)
#define LOG_BYTES_KEEP (32u << 20)

static const char *const KIND_NAMES[KUBE_KINDS] = { "pod", "service" };

static void free_object(void *p)
{
	struct kube_object *o = p;

	free(o->uid);
	free(o->json);
	free(o->resource_version);
	free(o);
}

int mr_kube_store_init(struct kube_store *s)
{
	memset(s, 0, sizeof(*s));
	s->log_limit = LOG_LIMIT;
	s->next_seq = 1;
	s->by_uid = mr_string_map_new(free_object);
	return s->by_uid ? 0 : -ENOMEM;
}

void mr_kube_store_free(struct kube_store *s)
{
	for (size_t i = 0; i < s->nlog; i++)
		free(s->log[i].json);
	free(s->log);
	free(s->objects);
	mr_string_map_free(s->by_uid);
	memset(s, 0, sizeof(*s));
}

/* Drops the oldest changes once the log holds half as many again as it
 * keeps, or more text than LOG_BYTES_MAX, so that a trim's copy is paid
 * once per many changes. */
static void trim(struct kube_store *s)
{
	size_t drop = 0;

	if (s->nlog <= s->log_limit + s->log_limit / 2 && s->log_bytes <= LOG_BYTES_MAX)
		return;
	while (drop < s->nlog && (s->nlog - drop > s->log_limit || s->log_bytes > LOG_BYTES_KEEP)) {
		s->log_bytes -= s->log[drop].len;
		free(s->log[drop].json);
		drop++;
	}
	memmove(s->log, s->log + drop, (s->nlog - drop) * sizeof(*s->log));
	s->nlog -= drop;
}

/* Appends a change; json (may be NULL) becomes the log's. */
static int log_change(struct kube_store *s, uint32_t kind, const char *type, char *json)
{
	struct kube_change *grown = mr_grow_array(s->log, &s->cap_log, s->nlog + 1, sizeof(*s->log));

	if (!grown) {
		free(json);
		return -ENOMEM;
	}
	s->log = grown;
	s->log[s->nlog++] = (struct kube_change){
		.seq = s->next_seq++, .kind = kind, .type = type, .json = json, .len = json ? strlen(json) : 0
	};
	s->log_bytes += s->log[s->nlog - 1].len;
	trim(s);
	return 0;
}

static int log_copy(struct kube_store *s, uint32_t kind, const char *type, const char *json)
{
	char *copy = strdup(json);

	return copy ? log_change(s, kind, type, copy) : -ENOMEM;
}

static void remove_object(struct kube_store *s, struct kube_object *o)
{
	struct kube_object *last = s->objects[--s->nobjects];

	last->slot = o->slot;
	s->objects[o->slot] = last;
	s->counts[o->kind]--;
	mr_string_map_take(s->by_uid, o->uid);
}

static int add_object(struct kube_store *s, struct kube_object *o)
{
	struct kube_object **grown = mr_grow_array(s->objects, &s->cap_objects, s->nobjects + 1,
						   sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	s->objects = grown; /* a larger copy: the old array is freed */
	if (mr_string_map_put(s->by_uid, o->uid, o) != 0)
		return -ENOMEM;
	o->slot = s->nobjects;
	s->objects[s->nobjects++] = o;
	s->counts[o->kind]++;
	return 0;
}

static int replace(struct kube_store *s, struct kube_object *o, const char *rv, char *json)
{
	char *rv_copy = strdup(rv);

	if (!rv_copy) {
		free(json);
		return -ENOMEM;
	}
	free(o->json);
	free(o->resource_version);
	o->json = json;
	o->resource_version = rv_copy;
	return log_copy(s, o->kind, "MODIFIED", json);
}

int mr_kube_store_upsert(struct kube_store *s, uint32_t kind, uint32_t stream, uint64_t generation,
			 struct json_object *obj)
{
	const char *uid = mr_kube_json_meta(obj, "uid"), *rv = mr_kube_json_meta(obj, "resourceVersion");
	struct kube_object *o;
	char *json;
	int rc;

	if (!uid || !rv)
		return -EINVAL;
	o = mr_string_map_get(s->by_uid, uid);
	if (o) {
		o->generation = generation;
		o->stream = stream;
		if (strcmp(o->resource_version, rv) == 0)
			return 0;
	}
	json = mr_kube_json_text(obj);
	if (!json)
		return -ENOMEM;
	if (o)
		return replace(s, o, rv, json);
	o = calloc(1, sizeof(*o));
	if (!o || !(o->uid = strdup(uid)) || !(o->resource_version = strdup(rv))) {
		free(json);
		if (o)
			free_object(o);
		return -ENOMEM;
	}
	o->json = json;
	o->kind = kind;
	o->stream = stream;
	o->generation = generation;
	rc = add_object(s, o);
	if (rc != 0) {
		free_object(o);
		return rc;
	}
	return log_copy(s, kind, "ADDED", json);
}

int mr_kube_store_delete(struct kube_store *s, struct json_object *obj)
{
	const char *uid = mr_kube_json_meta(obj, "uid");
	struct kube_object *o = uid ? mr_string_map_get(s->by_uid, uid) : NULL;
	uint32_t kind;
	char *json;

	if (!o)
		return 0;
	kind = o->kind;
	remove_object(s, o);
	free_object(o);
	json = mr_kube_json_text(obj);
	return json ? log_change(s, kind, "DELETED", json) : -ENOMEM;
}

int mr_kube_store_sweep(struct kube_store *s, uint32_t stream, uint64_t generation)
{
	int rc = 0;

	for (size_t i = s->nobjects; i-- > 0;) {
		struct kube_object *o = s->objects[i];
		uint32_t kind = o->kind;
		char *json = o->json;

		if (o->stream != stream || o->generation == generation)
			continue;
		o->json = NULL;
		remove_object(s, o);
		free_object(o);
		if (rc != 0)
			free(json);
		else
			rc = log_change(s, kind, "DELETED", json);
	}
	return rc;
}

int mr_kube_store_synced(struct kube_store *s, uint32_t kind)
{
	if (s->synced[kind])
		return 0;
	s->synced[kind] = 1;
	return log_change(s, kind, "SYNCED", NULL);
}

const char *mr_kube_kind_name(uint32_t kind)
{
	return KIND_NAMES[kind];
}
