/* log.c - writes "2026-11-29T19:55:01.123Z info  [source] message" lines to
 * stderr in one write each, so lines from threads never interleave. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

/* The one process-wide setting of the log. */
static int min_level = MR_LEVEL_INFO;

static const char *const LEVEL_NAMES[] = { "debug", "info", "warn", "error" };

void mr_log_set_level(int level)
{
	min_level = level;
}

int mr_log_enabled(int level)
{
	return level >= min_level;
}

static size_t timestamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	return n + (size_t)snprintf(buf + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

void mr_log(int level, const char *source, const char *fmt, ...)
{
	char line[2048];
	size_t n;
	va_list ap;
	int w;

	if (!mr_log_enabled(level) || level < 0 || level > MR_LEVEL_ERROR)
		return;
	n = timestamp(line, sizeof(line));
	n += (size_t)snprintf(line + n, sizeof(line) - n, " %-5s [%s] ", LEVEL_NAMES[level], source);
	va_start(ap, fmt);
	w = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	n = w < 0 ? n : (n + (size_t)w < sizeof(line) - 1 ? n + (size_t)w : sizeof(line) - 2);
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}

void *mr_fail_null(int rc)
{
	errno = -rc;
	return NULL;
}

int mr_error(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen > 0) {
		va_start(ap, fmt);
		if (vsnprintf(err, errlen, fmt, ap) < 0)
			err[0] = '\0';
		va_end(ap);
	}
	return rc;
}
