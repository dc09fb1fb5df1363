/* kube_changes.c - the change log as JSON lines for a reader's cursor: the
 * changes after it, or, when it is older than the log keeps (or not one
 * this store gave), a RESET line, every current object as ADDED and each
 * synced kind's SYNCED, in one answer. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube/kube_internal.h"

/* Writes one record line at buf + at when it fits in cap; its length. */
static size_t record(char *buf, size_t cap, size_t at, uint32_t kind, const char *type, const char *json)
{
	const char *name = mr_kube_kind_name(kind);
	int n;

	if (json)
		n = snprintf(at < cap ? buf + at : NULL, at < cap ? cap - at : 0,
			     "{\"kind\":\"%s\",\"type\":\"%s\",\"object\":%s}\n", name, type, json);
	else
		n = snprintf(at < cap ? buf + at : NULL, at < cap ? cap - at : 0,
			     "{\"kind\":\"%s\",\"type\":\"%s\"}\n", name, type);
	return n < 0 ? 0 : (size_t)n;
}

/* Every current object, after a RESET line: all of it or nothing. */
static int64_t reset(struct kube_store *s, uint64_t *cursor, char *buf, size_t cap)
{
	static const char RESET[] = "{\"type\":\"RESET\"}\n";
	size_t at = sizeof(RESET) - 1;

	if (at < cap)
		memcpy(buf, RESET, at);
	for (size_t i = 0; i < s->nobjects; i++)
		at += record(buf, cap, at, s->objects[i]->kind, "ADDED", s->objects[i]->json);
	for (uint32_t kind = 0; kind < KUBE_KINDS; kind++)
		if (s->synced[kind])
			at += record(buf, cap, at, kind, "SYNCED", NULL);
	if (at >= cap) {
		errno = ENOBUFS;
		return -1;
	}
	*cursor = s->next_seq - 1;
	return (int64_t)at;
}

int64_t mr_kube_store_changes(struct kube_store *s, uint64_t *cursor, char *buf, size_t cap)
{
	uint64_t first = s->nlog ? s->log[0].seq : s->next_seq;
	size_t at = 0;

	if (*cursor + 1 < first || *cursor >= s->next_seq)
		return reset(s, cursor, buf, cap);
	for (size_t i = (size_t)(*cursor + 1 - first); i < s->nlog; i++) {
		const struct kube_change *c = &s->log[i];
		size_t n = record(buf, cap, at, c->kind, c->type, c->json);

		if (at + n >= cap)
			break;
		at += n;
		*cursor = c->seq;
	}
	if (at == 0 && *cursor + 1 < s->next_seq) {
		errno = ENOBUFS;
		return -1;
	}
	return (int64_t)at;
}
