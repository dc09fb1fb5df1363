/* kube_events.c - what a list page and a watch stream say, applied to the
 * store: a page's items (and where the list goes on, or the version the
 * watch starts from), and a watch's events one JSON line each, as the
 * chunks bring them (a line may span chunks, a chunk hold many lines). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "kube/kube_internal.h"

static const char *string_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int set_string(char **to, const char *value)
{
	char *copy = value && *value ? strdup(value) : NULL;

	if (value && *value && !copy)
		return -ENOMEM;
	free(*to);
	*to = copy;
	return 0;
}

int mr_kube_list_page(struct kube_stream *st)
{
	struct mr_kube *k = st->k;
	struct json_object *doc = st->body.data ? json_tokener_parse(st->body.data) : NULL, *items, *meta;
	int rc = 0;

	if (!doc || !json_object_object_get_ex(doc, "items", &items) ||
	    !json_object_is_type(items, json_type_array) ||
	    !json_object_object_get_ex(doc, "metadata", &meta)) {
		json_object_put(doc);
		return -EINVAL;
	}
	pthread_mutex_lock(&k->lock);
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		int one = mr_kube_store_upsert(&k->store, st->kind, st->index, st->generation,
					       json_object_array_get_idx(items, i));

		rc = rc ?: one;
	}
	pthread_mutex_unlock(&k->lock);
	rc = rc ?: set_string(&st->continue_token, string_of(meta, "continue"));
	rc = rc ?: set_string(&st->resource_version, string_of(meta, "resourceVersion"));
	json_object_put(doc);
	return rc;
}

/* The code of an ERROR event's Status, or 0. */
static int32_t error_code(struct json_object *obj)
{
	struct json_object *code;

	if (!json_object_object_get_ex(obj, "code", &code))
		return 0;
	return json_object_get_int(code);
}

/* One event, lock held. */
static void apply(struct kube_stream *st, const char *type, struct json_object *obj)
{
	struct mr_kube *k = st->k;
	const char *rv = mr_kube_json_meta(obj, "resourceVersion");
	int rc = 0;

	if (strcmp(type, "ERROR") == 0) {
		if (error_code(obj) == 410) {
			st->gone = 1;
			return;
		}
		st->failed = 1;
		mr_kube_note_error(k, "watch of %s: %s", st->path,
				   string_of(obj, "message") ? string_of(obj, "message") : "an ERROR event");
		return;
	}
	if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0)
		rc = mr_kube_store_upsert(&k->store, st->kind, st->index, st->generation, obj);
	else if (strcmp(type, "DELETED") == 0)
		rc = mr_kube_store_delete(&k->store, obj);
	else if (strcmp(type, "BOOKMARK") != 0)
		return;
	if (strcmp(type, "BOOKMARK") != 0)
		k->status.events++;
	if (rc != 0)
		mr_kube_note_error(k, "watch of %s: a %s event not applied: %s", st->path, type,
				   rc == -ENOMEM ? "out of memory" : "no uid or resourceVersion");
	if (rv && set_string(&st->resource_version, rv) != 0)
		mr_kube_note_error(k, "watch of %s: out of memory", st->path);
}

static void line(struct kube_stream *st, const char *text)
{
	struct json_object *ev = json_tokener_parse(text), *obj;
	const char *type = string_of(ev, "type");

	pthread_mutex_lock(&st->k->lock);
	if (!type || !json_object_object_get_ex(ev, "object", &obj) ||
	    !json_object_is_type(obj, json_type_object))
		mr_kube_note_error(st->k, "watch of %s: an event that is not one: %.60s", st->path, text);
	else
		apply(st, type, obj);
	pthread_mutex_unlock(&st->k->lock);
	json_object_put(ev);
}

void mr_kube_watch_lines(struct kube_stream *st)
{
	struct kube_body *b = &st->body;
	size_t start = 0;
	char *nl;

	if (!b->data)
		return;
	while (start < b->len && (nl = memchr(b->data + start, '\n', b->len - start))) {
		*nl = 0;
		if (nl > b->data + start)
			line(st, b->data + start);
		start = (size_t)(nl - b->data) + 1;
	}
	memmove(b->data, b->data + start, b->len - start + 1);
	b->len -= start;
}
