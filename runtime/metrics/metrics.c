/* metrics.c - the registry of Prometheus counters, gauges and histograms:
 * series registration (hash lookups by name and by name plus label set) and
 * value updates. Rendering is in metrics_render.c.
 *
 * Single-threaded: only the agent's main thread may use a registry.
 * A series is identified by its metric name and its label set as written;
 * asking again for it returns the same id, so re-registering after a hot
 * reload keeps counting in the same series. A metric's help text is the
 * last non-empty one given for its name (a new script version may reword
 * it). mr_metrics_value() of a histogram is its observation count.
 *
 * Sums are compensated (Neumaier): the rounding error of each addition is
 * kept apart and added back when read, so adding 0.1 ten times gives 1, not
 * 0.9999999999999999. Durations observed in nanoseconds are summed as
 * integers and divided once, so their sum prints as the decimal it is. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "base/log.h"
#include "metrics/metrics_labels.h"
#include "metrics/metrics_internal.h"

const double mr_metrics_bucket_bounds[MR_METRICS_BUCKETS - 1] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
};

const char *const mr_metrics_type_names[MR_HISTOGRAM + 1] = { "counter", "gauge", "histogram" };
static const char *const hist_suffixes[] = { "_bucket", "_sum", "_count" };
#define NSUFFIXES (sizeof(hist_suffixes) / sizeof(hist_suffixes[0]))

/* A metric name to look up: base[0..base_len) followed by suffix. */
struct name_key {
	const struct mr_metrics *m;
	const char *base;
	size_t base_len;
	const char *suffix;
};

struct series_key {
	const struct mr_metrics *m;
	uint32_t metric;
	const char *labels;
};

mr_metrics *mr_metrics_new(char *err, size_t errlen)
{
	mr_metrics *m = calloc(1, sizeof(*m));

	if (m && mr_intern_init(&m->strings)) {
		free(m);
		m = NULL;
	}
	if (!m)
		mr_error(err, errlen, -ENOMEM, "out of memory for a metrics registry");
	return m;
}

void mr_metrics_free(mr_metrics *m)
{
	if (!m)
		return;
	mr_intern_free(&m->strings);
	free(m->metrics);
	mr_hash_index_free(&m->metric_index);
	free(m->series);
	mr_hash_index_free(&m->series_index);
	free(m->hists);
	free(m->text);
	free(m);
}

static uint32_t name_hash(const char *base, size_t base_len, const char *suffix)
{
	return mr_hash_finish(
		mr_hash_bytes(mr_hash_bytes(MR_HASH_SEED, base, base_len), suffix, strlen(suffix)));
}

static int name_equal(const void *ctx, uint32_t id)
{
	const struct name_key *k = ctx;
	const char *name = mr_intern_get(&k->m->strings, k->m->metrics[id].name);

	return strncmp(name, k->base, k->base_len) == 0 && strcmp(name + k->base_len, k->suffix) == 0;
}

static uint32_t find_metric(const mr_metrics *m, const char *base, size_t base_len, const char *suffix)
{
	struct name_key key = { .m = m, .base = base, .base_len = base_len, .suffix = suffix };

	return mr_hash_index_find(&m->metric_index, name_hash(base, base_len, suffix), name_equal, &key);
}

/* Checks that the sample names a new metric exposes (name, or name_bucket,
 * _sum and _count for a histogram) are not exposed by another metric. */
static int check_exposed_names(const mr_metrics *m, uint32_t type, const char *name, char *err, size_t errlen)
{
	size_t len = strlen(name);
	size_t i;

	for (i = 0; i < NSUFFIXES; i++) {
		size_t slen = strlen(hist_suffixes[i]);
		uint32_t other;

		if (type == MR_HISTOGRAM)
			other = find_metric(m, name, len, hist_suffixes[i]);
		else if (len > slen && strcmp(name + len - slen, hist_suffixes[i]) == 0)
			other = find_metric(m, name, len - slen, "");
		else
			continue;
		if (other != MR_HASH_NONE &&
		    (type == MR_HISTOGRAM || m->metrics[other].type == MR_HISTOGRAM)) {
			snprintf(err, errlen, "metric \"%s\" clashes with the samples of %s \"%s\"", name,
				 mr_metrics_type_names[m->metrics[other].type],
				 mr_intern_get(&m->strings, m->metrics[other].name));
			return -EINVAL;
		}
	}
	return 0;
}

static uint32_t add_metric(mr_metrics *m, uint32_t type, const char *name, const char *help)
{
	struct metric *metrics;
	struct metric mt = { .type = type, .first_series = MR_HASH_NONE, .last_series = MR_HASH_NONE };

	if (m->nmetrics >= MR_HASH_NONE)
		return MR_HASH_NONE;
	metrics = mr_grow_array(m->metrics, &m->metrics_cap, m->nmetrics + 1, sizeof(*metrics));
	if (!metrics)
		return MR_HASH_NONE;
	m->metrics = metrics;
	mt.name = mr_intern_add(&m->strings, name);
	mt.help = mr_intern_add(&m->strings, help);
	if (mt.name == MR_HASH_NONE || mt.help == MR_HASH_NONE ||
	    mr_hash_index_insert(&m->metric_index, name_hash(name, strlen(name), ""), (uint32_t)m->nmetrics))
		return MR_HASH_NONE;
	m->metrics[m->nmetrics] = mt;
	return (uint32_t)m->nmetrics++;
}

static uint32_t series_hash(uint32_t metric, const char *labels)
{
	return mr_hash_finish(mr_hash_bytes(mr_hash_word(MR_HASH_SEED, metric), labels, strlen(labels)));
}

static int series_equal(const void *ctx, uint32_t id)
{
	const struct series_key *k = ctx;
	const struct series *s = &k->m->series[id];

	return s->metric == k->metric && strcmp(mr_intern_get(&k->m->strings, s->labels), k->labels) == 0;
}

/* Gives a new histogram series its bucket counts; returns 0 or -ENOMEM. */
static int add_histogram(mr_metrics *m, struct series *s)
{
	struct histogram *hists;

	hists = mr_grow_array(m->hists, &m->hists_cap, m->nhists + 1, sizeof(*hists));
	if (!hists)
		return -ENOMEM;
	m->hists = hists;
	memset(&hists[m->nhists], 0, sizeof(*hists));
	s->hist = (uint32_t)m->nhists++;
	return 0;
}

static uint32_t add_series(mr_metrics *m, uint32_t metric, const char *labels, uint32_t hash)
{
	struct metric *mt = &m->metrics[metric];
	struct series s = { .metric = metric, .next = MR_HASH_NONE, .hist = MR_HASH_NONE };
	struct series *series;
	uint32_t id = (uint32_t)m->nseries;

	if (m->nseries >= INT32_MAX)
		return MR_HASH_NONE;
	series = mr_grow_array(m->series, &m->series_cap, m->nseries + 1, sizeof(*series));
	if (!series)
		return MR_HASH_NONE;
	m->series = series;
	s.labels = mr_intern_add(&m->strings, labels);
	if (s.labels == MR_HASH_NONE || (mt->type == MR_HISTOGRAM && add_histogram(m, &s)) ||
	    mr_hash_index_insert(&m->series_index, hash, id))
		return MR_HASH_NONE;
	m->series[id] = s;
	if (mt->last_series == MR_HASH_NONE)
		mt->first_series = id;
	else
		m->series[mt->last_series].next = id;
	mt->last_series = id;
	m->nseries++;
	return id;
}

static int check_arguments(uint32_t type, const char *name, const char *help, const char *labels, char *err,
			   size_t errlen)
{
	if (type > MR_HISTOGRAM)
		return mr_error(err, errlen, -EINVAL, "invalid metric type %u", type);
	if (!mr_metrics_name_valid(name, strlen(name)))
		return mr_error(err, errlen, -EINVAL, "invalid metric name \"%s\"", name);
	if (!mr_metrics_utf8_valid(help))
		return mr_error(err, errlen, -EINVAL, "help text of metric \"%s\" is not UTF-8", name);
	return mr_metrics_labels_check(labels, type == MR_HISTOGRAM ? "le" : NULL, err, errlen);
}

static int set_help(mr_metrics *m, struct metric *mt, const char *help, char *err, size_t errlen)
{
	uint32_t id;

	if (strcmp(mr_intern_get(&m->strings, mt->help), help) == 0)
		return 0;
	id = mr_intern_add(&m->strings, help);
	if (id == MR_HASH_NONE)
		return mr_error(err, errlen, -ENOMEM,
				"cannot change the help of metric \"%s\": out of memory",
				mr_intern_get(&m->strings, mt->name));
	mt->help = id;
	return 0;
}

/* Finds the metric called name, creating it when new: 0, or -EINVAL when it
 * has another type or clashes with another's samples, or -ENOMEM. */
static int metric_for(mr_metrics *m, uint32_t type, const char *name, const char *help, uint32_t *id,
		      char *err, size_t errlen)
{
	*id = find_metric(m, name, strlen(name), "");
	if (*id != MR_HASH_NONE && m->metrics[*id].type != type)
		return mr_error(err, errlen, -EINVAL, "metric \"%s\" is a %s, not a %s", name,
				mr_metrics_type_names[m->metrics[*id].type], mr_metrics_type_names[type]);
	if (*id != MR_HASH_NONE)
		return *help ? set_help(m, &m->metrics[*id], help, err, errlen) : 0;
	if (check_exposed_names(m, type, name, err, errlen))
		return -EINVAL;
	*id = add_metric(m, type, name, help);
	if (*id == MR_HASH_NONE)
		return mr_error(err, errlen, -ENOMEM, "cannot add metric \"%s\": out of memory", name);
	return 0;
}

/* Keeps an error message on one line: user text may hold control bytes. */
static void one_line(char *err, size_t errlen)
{
	for (; err && errlen && *err; err++, errlen--)
		if ((unsigned char)*err < 0x20 || *err == 0x7f)
			*err = '?';
}

static int32_t series_for(mr_metrics *m, uint32_t type, const char *name, const char *help,
			  const char *labels, char *err, size_t errlen)
{
	struct series_key key = { .m = m, .labels = labels };
	uint32_t hash, id;
	int rc = check_arguments(type, name, help, labels, err, errlen);

	if (rc == 0)
		rc = metric_for(m, type, name, help, &key.metric, err, errlen);
	if (rc != 0)
		return rc;
	hash = series_hash(key.metric, labels);
	id = mr_hash_index_find(&m->series_index, hash, series_equal, &key);
	if (id == MR_HASH_NONE)
		id = add_series(m, key.metric, labels, hash);
	if (id == MR_HASH_NONE)
		return mr_error(err, errlen, -ENOMEM, "cannot add a series to metric \"%s\": out of memory",
				name);
	return (int32_t)id;
}

int32_t mr_metrics_series(mr_metrics *m, uint32_t type, const char *name, const char *help,
			  const char *labels, char *err, size_t errlen)
{
	int32_t id;

	if (!m || !name)
		return mr_error(err, errlen, -EINVAL, "no registry or no metric name");
	id = series_for(m, type, name, help ? help : "", labels ? labels : "", err, errlen);
	if (id < 0)
		one_line(err, errlen);
	return id;
}

static struct series *series_at(const mr_metrics *m, int32_t id)
{
	if (!m || id < 0 || (size_t)id >= m->nseries)
		return NULL;
	return &m->series[id];
}

static uint32_t series_type(const mr_metrics *m, const struct series *s)
{
	return m->metrics[s->metric].type;
}

/* value += v, keeping what rounding took in error (Neumaier's summation). */
static void sum_add(struct series *s, double v)
{
	double t = s->value + v;

	if (!isfinite(t))
		s->error = 0;
	else if (fabs(s->value) >= fabs(v))
		s->error += (s->value - t) + v;
	else
		s->error += (v - t) + s->value;
	s->value = t;
}

double mr_metrics_sum(const struct mr_metrics *m, const struct series *s)
{
	double sum = s->value + s->error;

	if (m->metrics[s->metric].type == MR_HISTOGRAM && m->hists[s->hist].sum_ns)
		sum += (double)m->hists[s->hist].sum_ns / 1e9;
	return sum;
}

void mr_metrics_add(mr_metrics *m, int32_t series, double v)
{
	struct series *s = series_at(m, series);

	if (!s || series_type(m, s) == MR_HISTOGRAM)
		return;
	if (series_type(m, s) == MR_COUNTER && !(v >= 0))
		return; /* counters only go up; NaN is no increase either */
	sum_add(s, v);
}

void mr_metrics_set(mr_metrics *m, int32_t series, double v)
{
	struct series *s = series_at(m, series);

	if (s && series_type(m, s) == MR_GAUGE) {
		s->value = v;
		s->error = 0;
	}
}

/* Counts an observation of v seconds in its bucket; the histogram series, or
 * NULL when series is not one. */
static struct series *count_observation(mr_metrics *m, int32_t series, double v)
{
	struct series *s = series_at(m, series);
	struct histogram *h;
	size_t b = 0;

	if (!s || series_type(m, s) != MR_HISTOGRAM || isnan(v))
		return NULL;
	while (b < MR_METRICS_BUCKETS - 1 && v > mr_metrics_bucket_bounds[b])
		b++;
	h = &m->hists[s->hist];
	h->counts[b]++;
	h->count++;
	return s;
}

void mr_metrics_observe(mr_metrics *m, int32_t series, double v)
{
	struct series *s = count_observation(m, series, v);

	if (s)
		sum_add(s, v);
}

void mr_metrics_observe_ns(mr_metrics *m, int32_t series, uint64_t ns)
{
	struct series *s = count_observation(m, series, (double)ns / 1e9);

	if (s)
		m->hists[s->hist].sum_ns += ns;
}

double mr_metrics_value(const mr_metrics *m, int32_t series)
{
	const struct series *s = series_at(m, series);

	if (!s)
		return 0;
	if (series_type(m, s) == MR_HISTOGRAM)
		return (double)m->hists[s->hist].count;
	return mr_metrics_sum(m, s);
}
