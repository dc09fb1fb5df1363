/* agent_health.c - the first line of /healthz: "ok", "degraded: script NAME
 * disabled (WHY) since TIME" while a script is disabled (its budget ran out,
 * or it did not start: what it does is not done until a reload loads it
 * again), or "degraded: WHAT since TIME (DETAIL)" while a script reports
 * that the agent cannot do part of its job (the Rover module, when OAP is
 * unreachable). A degraded agent still runs, so /healthz keeps answering
 * 200: restarting it would not bring OAP back nor mend a script, and what it
 * collects meanwhile is kept.
 *
 * The state is global because there is one agent per process and scripts
 * reach the runtime only through api.h; it is read and written on the main
 * thread only (scripts and the stats timer run there). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/agent_health.h"
#include "base/log.h"
#include "script_host/script.h"
#include "script_host/script_set.h"

enum { HEALTH_LINE_MAX = 512 };

static char health_line[HEALTH_LINE_MAX];

/* since_epoch_ms as "2006-01-02T15:04:05Z"; "" when it cannot be shown. */
static void utc_text(double since_epoch_ms, char *buf, size_t len)
{
	time_t secs = (time_t)(since_epoch_ms / 1000.0);
	struct tm tm;

	buf[0] = '\0';
	if (since_epoch_ms < 0 || !gmtime_r(&secs, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		buf[0] = '\0';
}

int mr_agent_health_degrade(const char *what, double since_epoch_ms, const char *detail, char *err,
			    size_t errlen)
{
	char since[32];

	if (!what || !*what)
		return mr_error(err, errlen, -EINVAL, "a degraded state needs to say what is degraded");
	utc_text(since_epoch_ms, since, sizeof(since));
	if (!since[0])
		return mr_error(err, errlen, -EINVAL, "%.0f is not a time (milliseconds since 1970)",
				since_epoch_ms);
	snprintf(health_line, sizeof(health_line), "degraded: %s since %s%s%s%s", what, since,
		 detail && *detail ? " (" : "", detail && *detail ? detail : "",
		 detail && *detail ? ")" : "");
	return 0;
}

void mr_agent_health_restore(void)
{
	health_line[0] = '\0';
}

/* The script disabled longest, or NULL when every script runs. */
static const struct mr_script *longest_disabled(const struct mr_script_set *h)
{
	const struct mr_script *first = NULL;

	for (size_t i = 0; i < h->nscripts; i++) {
		const struct mr_script *s = h->scripts[i];

		if (s->disabled && (!first || s->disabled_since_ms < first->disabled_since_ms))
			first = s;
	}
	return first;
}

void mr_agent_health_line(const struct mr_script_set *h, char *buf, size_t len)
{
	const struct mr_script *s = longest_disabled(h);
	char since[32];

	if (!s) {
		snprintf(buf, len, "%s", health_line[0] ? health_line : "ok");
		return;
	}
	utc_text(s->disabled_since_ms, since, sizeof(since));
	snprintf(buf, len, "degraded: script %s disabled (%s)%s%s", s->name, s->why,
		 since[0] ? " since " : "", since);
}
