/* metrics_labels.h - validation of Prometheus metric names, label sets and UTF-8 text. */
#ifndef MR_METRICS_METRICS_LABELS_H
#define MR_METRICS_METRICS_LABELS_H

#include <stddef.h>

/* Answers whether name[0..len) matches [a-zA-Z_:][a-zA-Z0-9_:]*. */
int mr_metrics_name_valid(const char *name, size_t len);

/* Answers whether s is valid UTF-8 (no overlong forms, no surrogates). */
int mr_metrics_utf8_valid(const char *s);

/* Checks a label set: "" or name="value" pairs separated by commas, names
 * matching [a-zA-Z_][a-zA-Z0-9_]* and not starting with "__", no name twice,
 * values UTF-8 with only \\, \" and \n escapes. reserved (may be NULL) is one
 * more name that is not allowed. Returns 0, or -EINVAL with the reason in err. */
int mr_metrics_labels_check(const char *labels, const char *reserved, char *err, size_t errlen);

#endif
