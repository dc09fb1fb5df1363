/* metrics_mark.h - trial registrations: a mark of what a registry holds,
 * and a rollback to it that forgets every metric and series registered
 * since (a reload's canary registers its series, and none must outlive it). */
#ifndef MR_METRICS_METRICS_MARK_H
#define MR_METRICS_METRICS_MARK_H

#include <stddef.h>

#include "api_test.h"

struct mr_metrics_mark {
	size_t metrics;
	size_t series;
	size_t hists;
	size_t bounds;
	size_t counts;
};

struct mr_metrics_mark mr_metrics_mark(const mr_metrics *m);
/* Forgets what was registered since mark; the ids handed out meanwhile
 * must not be used again (they will name other series). */
void mr_metrics_rollback(mr_metrics *m, const struct mr_metrics_mark *mark);

#endif
