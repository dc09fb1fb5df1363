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
 * A histogram's bucket bounds belong to its metric, fixed when it is
 * created: a series registered later with other bounds would count in
 * buckets its siblings do not have, so it is refused. Each series holds
 * exactly its metric's number of bucket counts, in one shared array.
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
#include "metrics/metrics_bounds.h"
#include "metrics/metrics_labels.h"
#include "metrics/metrics_internal.h"

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

/* A series asked for: its metric's type, name and help, its labels and, for
 * a histogram, its metric's bucket bounds. */
struct series_spec {
	uint32_t type;
	const char *name;
	const char *help;
	const char *labels;
	const double *bounds;
	uint32_t nbounds;
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
	free(m->bounds);
	free(m->counts);
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

/* Makes room for n more bucket bounds; 0 or -ENOMEM. */
static int reserve_bounds(mr_metrics *m, uint32_t n)
{
	double *bounds;

	if (m->nbounds + n > UINT32_MAX)
		return -ENOMEM;
	bounds = mr_grow_array(m->bounds, &m->bounds_cap, m->nbounds + n, sizeof(*bounds));
	if (!bounds)
		return -ENOMEM;
	m->bounds = bounds;
	return 0;
}

static uint32_t add_metric(mr_metrics *m, const struct series_spec *spec)
{
	struct metric *metrics;
	struct metric mt = { .type = spec->type, .first_series = MR_HASH_NONE, .last_series = MR_HASH_NONE };

	if (m->nmetrics >= MR_HASH_NONE)
		return MR_HASH_NONE;
	metrics = mr_grow_array(m->metrics, &m->metrics_cap, m->nmetrics + 1, sizeof(*metrics));
	if (!metrics)
		return MR_HASH_NONE;
	m->metrics = metrics;
	mt.name = mr_intern_add(&m->strings, spec->name);
	mt.help = mr_intern_add(&m->strings, spec->help);
	if (mt.name == MR_HASH_NONE || mt.help == MR_HASH_NONE ||
	    (spec->type == MR_HISTOGRAM && reserve_bounds(m, spec->nbounds)) ||
	    mr_hash_index_insert(&m->metric_index, name_hash(spec->name, strlen(spec->name), ""),
				 (uint32_t)m->nmetrics))
		return MR_HASH_NONE;
	if (spec->type == MR_HISTOGRAM) {
		memcpy(m->bounds + m->nbounds, spec->bounds, spec->nbounds * sizeof(*spec->bounds));
		mt.bounds = (uint32_t)m->nbounds;
		mt.nbounds = spec->nbounds;
		m->nbounds += spec->nbounds;
	}
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

/* Gives a new histogram series its bucket counts, as many as its metric has
 * buckets; returns 0 or -ENOMEM. */
static int add_histogram(mr_metrics *m, struct series *s)
{
	size_t n = (size_t)m->metrics[s->metric].nbounds + 1;
	struct histogram *hists;
	uint64_t *counts;

	if (m->ncounts + n > UINT32_MAX)
		return -ENOMEM;
	counts = mr_grow_array(m->counts, &m->counts_cap, m->ncounts + n, sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	m->counts = counts;
	hists = mr_grow_array(m->hists, &m->hists_cap, m->nhists + 1, sizeof(*hists));
	if (!hists)
		return -ENOMEM;
	m->hists = hists;
	memset(counts + m->ncounts, 0, n * sizeof(*counts));
	hists[m->nhists] = (struct histogram){ .counts = (uint32_t)m->ncounts };
	m->ncounts += n;
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

static int check_arguments(const struct series_spec *spec, char *err, size_t errlen)
{
	const char *name = spec->name;
	int rc;

	if (spec->type > MR_HISTOGRAM)
		return mr_error(err, errlen, -EINVAL, "invalid metric type %u", spec->type);
	if (!mr_metrics_name_valid(name, strlen(name)))
		return mr_error(err, errlen, -EINVAL, "invalid metric name \"%s\"", name);
	if (!mr_metrics_utf8_valid(spec->help))
		return mr_error(err, errlen, -EINVAL, "help text of metric \"%s\" is not UTF-8", name);
	rc = mr_metrics_labels_check(spec->labels, spec->type == MR_HISTOGRAM ? "le" : NULL, err, errlen);
	if (rc == 0 && spec->type == MR_HISTOGRAM)
		rc = mr_metrics_bounds_check(name, spec->bounds, spec->nbounds, err, errlen);
	return rc;
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

/* Checks that an existing metric is what spec asks for: its type and, for a
 * histogram, its bucket bounds. 0 or -EINVAL. */
static int check_existing(const mr_metrics *m, const struct metric *mt, const struct series_spec *spec,
			  char *err, size_t errlen)
{
	char have[MR_METRICS_BOUNDS_TEXT_MAX], asked[MR_METRICS_BOUNDS_TEXT_MAX];
	const double *bounds;

	if (mt->type != spec->type)
		return mr_error(err, errlen, -EINVAL, "metric \"%s\" is a %s, not a %s", spec->name,
				mr_metrics_type_names[mt->type], mr_metrics_type_names[spec->type]);
	if (mt->type != MR_HISTOGRAM)
		return 0;
	bounds = m->bounds + mt->bounds;
	if (mr_metrics_bounds_equal(bounds, mt->nbounds, spec->bounds, spec->nbounds))
		return 0;
	mr_metrics_bounds_text(have, sizeof(have), bounds, mt->nbounds);
	mr_metrics_bounds_text(asked, sizeof(asked), spec->bounds, spec->nbounds);
	return mr_error(err, errlen, -EINVAL, "histogram \"%s\" has buckets %s, not %s", spec->name, have,
			asked);
}

/* Finds the metric spec names, creating it when new: 0, or -EINVAL when it
 * has another type or other bucket bounds, or clashes with another's
 * samples, or -ENOMEM. */
static int metric_for(mr_metrics *m, const struct series_spec *spec, uint32_t *id, char *err, size_t errlen)
{
	const char *name = spec->name;

	*id = find_metric(m, name, strlen(name), "");
	if (*id != MR_HASH_NONE && check_existing(m, &m->metrics[*id], spec, err, errlen))
		return -EINVAL;
	if (*id != MR_HASH_NONE)
		return *spec->help ? set_help(m, &m->metrics[*id], spec->help, err, errlen) : 0;
	if (check_exposed_names(m, spec->type, name, err, errlen))
		return -EINVAL;
	*id = add_metric(m, spec);
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

static int32_t series_for(mr_metrics *m, const struct series_spec *spec, char *err, size_t errlen)
{
	struct series_key key = { .m = m, .labels = spec->labels };
	uint32_t hash, id;
	int rc = check_arguments(spec, err, errlen);

	if (rc == 0)
		rc = metric_for(m, spec, &key.metric, err, errlen);
	if (rc != 0)
		return rc;
	hash = series_hash(key.metric, spec->labels);
	id = mr_hash_index_find(&m->series_index, hash, series_equal, &key);
	if (id == MR_HASH_NONE)
		id = add_series(m, key.metric, spec->labels, hash);
	if (id == MR_HASH_NONE)
		return mr_error(err, errlen, -ENOMEM, "cannot add a series to metric \"%s\": out of memory",
				spec->name);
	return (int32_t)id;
}

/* Fills in what was left out (NULL texts, no bounds) and registers. */
static int32_t register_series(mr_metrics *m, struct series_spec *spec, char *err, size_t errlen)
{
	int32_t id;

	if (!m || !spec->name)
		return mr_error(err, errlen, -EINVAL, "no registry or no metric name");
	if (!spec->help)
		spec->help = "";
	if (!spec->labels)
		spec->labels = "";
	if (spec->type == MR_HISTOGRAM && spec->nbounds == 0) {
		spec->bounds = mr_metrics_default_bounds;
		spec->nbounds = MR_METRICS_DEFAULT_BOUNDS;
	}
	id = series_for(m, spec, err, errlen);
	if (id < 0)
		one_line(err, errlen);
	return id;
}

int32_t mr_metrics_series(mr_metrics *m, uint32_t type, const char *name, const char *help,
			  const char *labels, char *err, size_t errlen)
{
	struct series_spec spec = { .type = type, .name = name, .help = help, .labels = labels };

	return register_series(m, &spec, err, errlen);
}

int32_t mr_metrics_histogram(mr_metrics *m, const char *name, const char *help, const char *labels,
			     const double *bounds, uint32_t nbounds, char *err, size_t errlen)
{
	struct series_spec spec = { .type = MR_HISTOGRAM,
				    .name = name,
				    .help = help,
				    .labels = labels,
				    .bounds = bounds,
				    .nbounds = nbounds };

	return register_series(m, &spec, err, errlen);
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
	const struct metric *mt;
	struct histogram *h;

	if (!s || series_type(m, s) != MR_HISTOGRAM || isnan(v))
		return NULL;
	mt = &m->metrics[s->metric];
	h = &m->hists[s->hist];
	m->counts[h->counts + mr_metrics_bounds_find(m->bounds + mt->bounds, mt->nbounds, v)]++;
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
