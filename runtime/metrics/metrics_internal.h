/* metrics_internal.h - the metrics registry's layout, shared by metrics.c (series and
 * values) and metrics_render.c (Prometheus text). Single-threaded. */
#ifndef MR_METRICS_METRICS_INTERNAL_H
#define MR_METRICS_METRICS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "api_test.h"
#include "base/hash_index.h"
#include "base/intern.h"

/* Room for any number as mr_metrics_format_number writes it, and its NUL. */
enum { MR_METRICS_NUMBER_MAX = 32 };

/* Writes v as the shortest text that reads back as v (metrics_render.c).
 * le: as a bucket bound, in the form Prometheus' client libraries give an
 * le label, which turns to an exponent from 1e6 up ("1e+06"). */
void mr_metrics_format_number(char *buf, size_t size, double v, int le);

/* "counter", "gauge", "histogram": indexed by enum mr_metric_type. */
extern const char *const mr_metrics_type_names[MR_HISTOGRAM + 1];

struct metric {
	uint32_t name;         /* string id */
	uint32_t help;         /* string id; 0 ("") when none */
	uint32_t type;         /* enum mr_metric_type */
	uint32_t first_series; /* series in registration order: a list through */
	uint32_t last_series;  /* struct series.next */
	uint32_t bounds;       /* histograms: its bucket bounds are nbounds doubles from */
	uint32_t nbounds;      /* mr_metrics.bounds[bounds] on (+Inf not included) */
};

struct histogram {
	uint64_t count;
	uint64_t sum_ns; /* what was observed in nanoseconds, summed exactly */
	uint32_t counts; /* its bucket counts, per bucket (not cumulative), are its metric's
			  * nbounds + 1 from mr_metrics.counts[counts] on; the last is +Inf's */
};

struct series {
	uint32_t metric;
	uint32_t labels; /* string id of the label set */
	uint32_t next;   /* next series of the same metric, MR_HASH_NONE at the end */
	uint32_t hist;   /* index in histograms, histograms only */
	double value;    /* counter or gauge value, histogram sum (of what was observed in seconds) */
	double error;    /* what rounding took from value as it was summed (see metrics.c) */
};

/* The value of a counter or gauge, the sum of a histogram. */
double mr_metrics_sum(const struct mr_metrics *m, const struct series *s);

struct mr_metrics {
	struct mr_intern strings; /* names, help texts and label sets */
	struct metric *metrics;
	size_t nmetrics, metrics_cap;
	struct mr_hash_index metric_index; /* by name */
	struct series *series;
	size_t nseries, series_cap;
	struct mr_hash_index series_index; /* by (metric, label set) */
	struct histogram *hists;
	size_t nhists, hists_cap;
	double *bounds; /* every histogram metric's bucket bounds, one run each */
	size_t nbounds, bounds_cap;
	uint64_t *counts; /* every histogram series' bucket counts, one run each */
	size_t ncounts, counts_cap;
	char *text; /* the last rendering */
	size_t text_cap;
};

#endif
