/* metrics_mark.c - rolls a registry back to a mark (metrics_mark.h). Ids
 * are positions, handed out in order, so what came after the mark is the
 * tail of each array: the arrays are cut there, the ids past it leave the
 * hash indexes, and the series lists of older metrics end where the mark
 * was. Interned names and labels stay (the intern table only grows). */
#include "metrics/metrics_internal.h"
#include "metrics/metrics_mark.h"

struct mr_metrics_mark mr_metrics_mark(const mr_metrics *m)
{
	return (struct mr_metrics_mark){ .metrics = m->nmetrics,
					 .series = m->nseries,
					 .hists = m->nhists,
					 .bounds = m->nbounds,
					 .counts = m->ncounts };
}

/* Removes every id from first on. A removal moves a later slot back into
 * the one emptied, so that slot is looked at again. */
static void drop_ids(struct mr_hash_index *h, size_t first)
{
	size_t i = 0;

	while (h->slots && i <= h->mask) {
		struct mr_hash_index_slot slot = h->slots[i];

		if (slot.id_plus1 && slot.id_plus1 - 1 >= first &&
		    mr_hash_index_remove(h, slot.hash, slot.id_plus1 - 1) == 0)
			continue;
		i++;
	}
}

/* Ends a metric's list of series before the first one past the mark. */
static void cut_series(mr_metrics *m, struct metric *mt, size_t first)
{
	uint32_t id = mt->first_series, last = MR_HASH_NONE;

	if (mt->last_series == MR_HASH_NONE || mt->last_series < first)
		return;
	while (id != MR_HASH_NONE && id < first) {
		last = id;
		id = m->series[id].next;
	}
	if (last == MR_HASH_NONE)
		mt->first_series = MR_HASH_NONE;
	else
		m->series[last].next = MR_HASH_NONE;
	mt->last_series = last;
}

void mr_metrics_rollback(mr_metrics *m, const struct mr_metrics_mark *mark)
{
	if (!m || mark->metrics > m->nmetrics || mark->series > m->nseries)
		return;
	drop_ids(&m->series_index, mark->series);
	drop_ids(&m->metric_index, mark->metrics);
	for (size_t i = 0; i < mark->metrics; i++)
		cut_series(m, &m->metrics[i], mark->series);
	m->nmetrics = mark->metrics;
	m->nseries = mark->series;
	m->nhists = mark->hists;
	m->nbounds = mark->bounds;
	m->ncounts = mark->counts;
}
