/* metrics_bounds.c - histogram bucket bounds: the default set, the check of
 * a set given for a metric, a comparison, a set as text for messages, and
 * the bucket a value falls in. */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "base/log.h"
#include "metrics/metrics_bounds.h"

const double mr_metrics_default_bounds[MR_METRICS_DEFAULT_BOUNDS] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
};

int mr_metrics_bounds_check(const char *name, const double *bounds, uint32_t n, char *err, size_t errlen)
{
	char a[MR_METRICS_NUMBER_MAX], b[MR_METRICS_NUMBER_MAX];
	uint32_t i;

	if (n > MR_HISTOGRAM_BOUNDS_MAX)
		return mr_error(err, errlen, -EINVAL, "histogram \"%s\": at most %d bucket bounds, not %u",
				name, MR_HISTOGRAM_BOUNDS_MAX, n);
	if (!bounds)
		return mr_error(err, errlen, -EINVAL,
				"histogram \"%s\": %u bucket bounds announced but none given", name, n);
	for (i = 0; i < n; i++) {
		if (!isfinite(bounds[i]) || !(bounds[i] > 0)) {
			mr_metrics_format_number(a, sizeof(a), bounds[i], 1);
			return mr_error(err, errlen, -EINVAL,
					"histogram \"%s\": bucket bound %u is %s, not a finite number above 0",
					name, i + 1, a);
		}
		if (i > 0 && !(bounds[i] > bounds[i - 1])) {
			mr_metrics_format_number(a, sizeof(a), bounds[i - 1], 1);
			mr_metrics_format_number(b, sizeof(b), bounds[i], 1);
			return mr_error(
				err, errlen, -EINVAL,
				"histogram \"%s\": bucket bounds must be strictly ascending, not %s then %s",
				name, a, b);
		}
	}
	return 0;
}

int mr_metrics_bounds_equal(const double *a, uint32_t na, const double *b, uint32_t nb)
{
	uint32_t i;

	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* Appends s to buf[0..len) as far as it fits; the new length. */
static size_t append(char *buf, size_t size, size_t len, const char *s)
{
	int w = len < size ? snprintf(buf + len, size - len, "%s", s) : 0;

	return w > 0 ? len + (size_t)w : len;
}

void mr_metrics_bounds_text(char *buf, size_t size, const double *bounds, uint32_t n)
{
	char x[MR_METRICS_NUMBER_MAX];
	size_t len = 0;
	uint32_t i;

	if (!size)
		return;
	buf[0] = '\0';
	len = append(buf, size, len, "{");
	for (i = 0; i < n; i++) {
		mr_metrics_format_number(x, sizeof(x), bounds[i], 1);
		len = append(buf, size, len, i ? "," : "");
		len = append(buf, size, len, x);
	}
	append(buf, size, len, "}");
}

uint32_t mr_metrics_bounds_find(const double *bounds, uint32_t n, double v)
{
	uint32_t b = 0;

	while (b < n && v > bounds[b])
		b++;
	return b;
}
