/* metrics_labels.c - validation of Prometheus metric names, label sets and UTF-8
 * text (see metrics_labels.h). Label sets are checked in place, without copies. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "metrics/metrics_labels.h"

static int is_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int mr_metrics_name_valid(const char *name, size_t len)
{
	size_t i;

	if (len == 0 || !(is_letter(name[0]) || name[0] == ':'))
		return 0;
	for (i = 1; i < len; i++)
		if (!(is_letter(name[i]) || is_digit(name[i]) || name[i] == ':'))
			return 0;
	return 1;
}

/* Length of the label name at s ([a-zA-Z_][a-zA-Z0-9_]*), 0 when none. */
static size_t label_name_len(const char *s)
{
	size_t n;

	if (!is_letter(s[0]))
		return 0;
	for (n = 1; is_letter(s[n]) || is_digit(s[n]); n++)
		;
	return n;
}

/* Length of the UTF-8 sequence at s, or 0 when it is not a valid one. Stops
 * at the first bad byte, so it never reads past a terminating NUL. */
static size_t utf8_seq_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0; /* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f; /* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90; /* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f; /* beyond U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

int mr_metrics_utf8_valid(const char *s)
{
	size_t n;

	for (; *s; s += n) {
		n = utf8_seq_len((const unsigned char *)s);
		if (n == 0)
			return 0;
	}
	return 1;
}

/* Skips a label value; s points just past its opening quote. Returns the
 * position just past the closing quote, or NULL with the reason in *why. */
static const char *skip_value(const char *s, const char **why)
{
	size_t n;

	for (; *s != '"'; s += n) {
		n = *s == '\\' ? 2 : utf8_seq_len((const unsigned char *)s);
		if (*s == '\0')
			*why = "unterminated value";
		else if (*s == '\n')
			*why = "newline in a value must be written \\n";
		else if (*s == '\\' && s[1] != '\\' && s[1] != '"' && s[1] != 'n')
			*why = "only \\\\, \\\" and \\n escapes are allowed in a value";
		else if (n == 0)
			*why = "value is not UTF-8";
		else
			continue;
		return NULL;
	}
	return s + 1;
}

/* Parses the name="value" pair at s. Returns where the next pair starts (the
 * terminating NUL after the last one), or NULL with the reason in *why. */
static const char *parse_pair(const char *s, size_t *name_len, const char **why)
{
	size_t n = label_name_len(s);

	if (n == 0) {
		*why = "expected a label name ([a-zA-Z_][a-zA-Z0-9_]*)";
		return NULL;
	}
	if (s[n] != '=' || s[n + 1] != '"') {
		*why = "expected =\" after the label name";
		return NULL;
	}
	s = skip_value(s + n + 2, why);
	if (!s)
		return NULL;
	*name_len = n;
	if (*s == ',')
		*why = s[1] ? NULL : "trailing comma";
	else
		*why = *s ? "expected a comma after a value" : NULL;
	if (*why)
		return NULL;
	return *s ? s + 1 : s;
}

/* Answers whether a pair in [labels, upto) is named name[0..len). */
static int name_seen(const char *labels, const char *upto, const char *name, size_t len)
{
	const char *why;
	const char *next;
	size_t n = 0;

	for (; labels && labels < upto; labels = next) {
		next = parse_pair(labels, &n, &why);
		if (next && n == len && memcmp(labels, name, len) == 0)
			return 1;
	}
	return 0;
}

/* Checks the name of the pair at s (n bytes); returns a reason or NULL. */
static const char *name_problem(const char *labels, const char *s, size_t n, const char *reserved)
{
	if (n >= 2 && s[0] == '_' && s[1] == '_')
		return "label names starting with __ are reserved";
	if (reserved && strlen(reserved) == n && memcmp(s, reserved, n) == 0)
		return "this label name is reserved for the metric type";
	if (name_seen(labels, s, s, n))
		return "label name used twice";
	return NULL;
}

int mr_metrics_labels_check(const char *labels, const char *reserved, char *err, size_t errlen)
{
	const char *s = labels;
	const char *next;
	const char *why = NULL;
	size_t n = 0;

	for (; *s; s = next) {
		next = parse_pair(s, &n, &why);
		if (next)
			why = name_problem(labels, s, n, reserved);
		if (why) {
			snprintf(err, errlen, "invalid labels {%s}: %s (at byte %zu)", labels, why,
				 (size_t)(s - labels));
			return -EINVAL;
		}
	}
	return 0;
}
