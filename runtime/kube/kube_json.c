/* kube_json.c - objects as the client keeps them: JSON text without
 * metadata.managedFields (the server-side apply bookkeeping, often half of
 * an object's size, which nothing here reads). */
#include <string.h>

#include <json-c/json.h>

#include "kube/kube_internal.h"

char *mr_kube_json_text(struct json_object *obj)
{
	struct json_object *meta;
	const char *text;

	if (json_object_object_get_ex(obj, "metadata", &meta) && json_object_is_type(meta, json_type_object))
		json_object_object_del(meta, "managedFields");
	text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	return text ? strdup(text) : NULL;
}

const char *mr_kube_json_meta(struct json_object *obj, const char *field)
{
	struct json_object *meta, *v;

	if (!json_object_object_get_ex(obj, "metadata", &meta) ||
	    !json_object_object_get_ex(meta, field, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}
