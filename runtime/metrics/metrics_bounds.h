/* metrics_bounds.h - histogram bucket bounds: the default set, the check of
 * a set given for a metric, a comparison, a set as text for messages, and
 * the bucket a value falls in. */
#ifndef MR_METRICS_METRICS_BOUNDS_H
#define MR_METRICS_METRICS_BOUNDS_H

#include <stddef.h>
#include <stdint.h>

#include "metrics/metrics_internal.h"

/* The bounds of a histogram registered without its own, in seconds. */
#define MR_METRICS_DEFAULT_BOUNDS 15
extern const double mr_metrics_default_bounds[MR_METRICS_DEFAULT_BOUNDS];

/* Checks the n bounds given for histogram name: at most
 * MR_HISTOGRAM_BOUNDS_MAX finite numbers above 0, strictly ascending (n is
 * at least 1). Returns 0, or -EINVAL with the reason in err. */
int mr_metrics_bounds_check(const char *name, const double *bounds, uint32_t n, char *err, size_t errlen);

/* Answers whether two sets of bounds are the same. */
int mr_metrics_bounds_equal(const double *a, uint32_t na, const double *b, uint32_t nb);

/* Writes bounds as "{0.005,0.01,...}", each as an le label shows it; a size
 * of MR_METRICS_BOUNDS_TEXT_MAX holds any set that passed the check. */
enum { MR_METRICS_BOUNDS_TEXT_MAX = MR_METRICS_NUMBER_MAX * MR_HISTOGRAM_BOUNDS_MAX + 2 };
void mr_metrics_bounds_text(char *buf, size_t size, const double *bounds, uint32_t n);

/* The index of the bucket v falls in: the first bound v does not exceed, n
 * (+Inf) when it exceeds them all. */
uint32_t mr_metrics_bounds_find(const double *bounds, uint32_t n, double v);

#endif
