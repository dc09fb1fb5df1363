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

/* Rewrites buf, the fixed-point text of v, in exponent form with the same
 * significant digits: 1500000 becomes 1.5e+06. */
static void to_exponent(char *buf, size_t size, double v)
{
	int digits = 0, trailing_zeros = 0;
	const char *c;

	for (c = buf; *c; c++) {
		if (*c < '0' || *c > '9')
			continue;
		if (*c == '0') {
			trailing_zeros += digits > 0;
			continue;
		}
		digits += trailing_zeros + 1;
		trailing_zeros = 0;
	}
	snprintf(buf, size, "%.*e", digits > 0 ? digits - 1 : 0, v);
}

/* The shortest %g text that reads back as v, so integers print as integers
 * and 0.1 as 0.1. A normal double that round-trips with 15 digits has no
 * shorter form than %.15g gives (15 digits are finer than its precision),
 * so only subnormal ones are tried from 1 digit up; the others from 15.
 * At those precisions %g writes numbers up to 1e15 without an exponent.
 * Go's shortest %g, with which Prometheus' client libraries write le
 * labels, takes one from 1e6 up, so an le does the same (both take one
 * below 1e-4). */
void mr_metrics_format_number(char *buf, size_t size, double v, int le)
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
			break;
	}
	if (prec == 17)
		snprintf(buf, size, "%.17g", v);
	if (le && fabs(v) >= 1e6 && !strchr(buf, 'e'))
		to_exponent(buf, size, v);
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

static void put_histogram(struct text *t, const mr_metrics *m, const struct metric *mt, const char *labels,
			  const struct series *s)
{
	char bound[MR_METRICS_NUMBER_MAX], le[MR_METRICS_NUMBER_MAX + 8], value[MR_METRICS_NUMBER_MAX];
	const char *name = mr_intern_get(&m->strings, mt->name);
	const struct histogram *h = &m->hists[s->hist];
	const double *bounds = m->bounds + mt->bounds;
	uint64_t cumulative = 0;
	uint32_t b;

	for (b = 0; b <= mt->nbounds; b++) {
		mr_metrics_format_number(bound, sizeof(bound), b < mt->nbounds ? bounds[b] : INFINITY, 1);
		snprintf(le, sizeof(le), "le=\"%s\"", bound);
		cumulative += m->counts[h->counts + b];
		snprintf(value, sizeof(value), "%" PRIu64, cumulative);
		put_sample(t, name, "_bucket", labels, le, value);
	}
	mr_metrics_format_number(value, sizeof(value), mr_metrics_sum(m, s), 0);
	put_sample(t, name, "_sum", labels, NULL, value);
	snprintf(value, sizeof(value), "%" PRIu64, h->count);
	put_sample(t, name, "_count", labels, NULL, value);
}

static void put_metric(struct text *t, const mr_metrics *m, const struct metric *mt)
{
	const char *name = mr_intern_get(&m->strings, mt->name);
	char value[MR_METRICS_NUMBER_MAX];
	uint32_t id;

	put_header(t, m, mt);
	for (id = mt->first_series; id != MR_HASH_NONE; id = m->series[id].next) {
		const struct series *s = &m->series[id];
		const char *labels = mr_intern_get(&m->strings, s->labels);

		if (mt->type == MR_HISTOGRAM) {
			put_histogram(t, m, mt, labels, s);
			continue;
		}
		mr_metrics_format_number(value, sizeof(value), mr_metrics_sum(m, s), 0);
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
