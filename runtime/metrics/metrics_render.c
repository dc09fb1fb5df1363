/* metrics_render.c - writes a metrics registry as Prometheus text exposition
 * format 0.0.4 into the registry's reusable buffer: per metric one HELP (when
 * it has help) and one TYPE line, then its series, all in registration order. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "metrics/metrics_internal.h"

enum { NUMBER_MAX = 32 };

struct text {
	char *data;
	size_t len, cap;
	int failed; /* out of memory: the text is incomplete */
};

static void put(struct text *t, const char *s, size_t n)
{
	char *data;

	if (t->failed)
		return;
	data = mr_grow_array(t->data, &t->cap, t->len + n + 1, 1);
	if (!data) {
		t->failed = 1;
		return;
	}
	t->data = data;
	memcpy(t->data + t->len, s, n);
	t->len += n;
	t->data[t->len] = '\0';
}

static void puts_text(struct text *t, const char *s)
{
	put(t, s, strlen(s));
}

/* The shortest %g text that reads back as v, so integers print as integers
 * and 0.1 as 0.1. A normal double that round-trips with 15 digits has no
 * shorter form than %.15g gives (15 digits are finer than its precision),
 * so only subnormal ones are tried from 1 digit up; the others from 15. */
static void format_number(char *buf, size_t size, double v)
{
	int prec;

	if (isnan(v)) {
		snprintf(buf, size, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, size, "%s", v > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (prec = fpclassify(v) == FP_SUBNORMAL ? 1 : 15; prec < 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
	snprintf(buf, size, "%.17g", v);
}

/* Writes help text with backslashes and newlines escaped. */
static void put_help(struct text *t, const char *help)
{
	size_t n;

	while (*help) {
		n = strcspn(help, "\\\n");
		put(t, help, n);
		help += n;
		if (*help)
			puts_text(t, *help++ == '\\' ? "\\\\" : "\\n");
	}
}

static void put_header(struct text *t, const mr_metrics *m, const struct metric *mt)
{
	const char *name = mr_intern_get(&m->strings, mt->name);
	const char *help = mr_intern_get(&m->strings, mt->help);

	if (*help) {
		puts_text(t, "# HELP ");
		puts_text(t, name);
		put(t, " ", 1);
		put_help(t, help);
		put(t, "\n", 1);
	}
	puts_text(t, "# TYPE ");
	puts_text(t, name);
	put(t, " ", 1);
	puts_text(t, mr_metrics_type_names[mt->type]);
	put(t, "\n", 1);
}

/* One sample line: name+suffix, the label set plus extra (may be NULL), value. */
static void put_sample(struct text *t, const char *name, const char *suffix, const char *labels,
		       const char *extra, const char *value)
{
	puts_text(t, name);
	puts_text(t, suffix);
	if (*labels || extra) {
		put(t, "{", 1);
		puts_text(t, labels);
		if (*labels && extra)
			put(t, ",", 1);
		if (extra)
			puts_text(t, extra);
		put(t, "}", 1);
	}
	put(t, " ", 1);
	puts_text(t, value);
	put(t, "\n", 1);
}

static void put_histogram(struct text *t, const char *name, const char *labels, const struct histogram *h,
			  double sum)
{
	char bound[NUMBER_MAX], le[NUMBER_MAX + 8], value[NUMBER_MAX];
	uint64_t cumulative = 0;
	size_t b;

	for (b = 0; b < MR_METRICS_BUCKETS; b++) {
		format_number(bound, sizeof(bound),
			      b < MR_METRICS_BUCKETS - 1 ? mr_metrics_bucket_bounds[b] : INFINITY);
		snprintf(le, sizeof(le), "le=\"%s\"", bound);
		cumulative += h->counts[b];
		snprintf(value, sizeof(value), "%" PRIu64, cumulative);
		put_sample(t, name, "_bucket", labels, le, value);
	}
	format_number(value, sizeof(value), sum);
	put_sample(t, name, "_sum", labels, NULL, value);
	snprintf(value, sizeof(value), "%" PRIu64, h->count);
	put_sample(t, name, "_count", labels, NULL, value);
}

static void put_metric(struct text *t, const mr_metrics *m, const struct metric *mt)
{
	const char *name = mr_intern_get(&m->strings, mt->name);
	char value[NUMBER_MAX];
	uint32_t id;

	put_header(t, m, mt);
	for (id = mt->first_series; id != MR_HASH_NONE; id = m->series[id].next) {
		const struct series *s = &m->series[id];
		const char *labels = mr_intern_get(&m->strings, s->labels);

		if (mt->type == MR_HISTOGRAM) {
			put_histogram(t, name, labels, &m->hists[s->hist], mr_metrics_sum(m, s));
			continue;
		}
		format_number(value, sizeof(value), mr_metrics_sum(m, s));
		put_sample(t, name, "", labels, NULL, value);
	}
}

const char *mr_metrics_render(mr_metrics *m, size_t *len)
{
	struct text t = { .data = m ? m->text : NULL, .cap = m ? m->text_cap : 0 };
	size_t i;

	if (len)
		*len = 0;
	if (!m)
		return NULL;
	put(&t, "", 0);
	for (i = 0; i < m->nmetrics; i++)
		if (m->metrics[i].first_series != MR_HASH_NONE)
			put_metric(&t, m, &m->metrics[i]);
	m->text = t.data;
	m->text_cap = t.cap;
	if (t.failed)
		return NULL;
	if (len)
		*len = t.len;
	return m->text;
}
