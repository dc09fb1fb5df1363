/* agent_health.h - the agent's health line on /healthz ("ok" or "degraded:
 * ..."): degraded while a script is disabled, or while a script says so
 * through api.h (mr_agent_health_degrade and mr_agent_health_restore). */
#ifndef MR_AGENT_AGENT_HEALTH_H
#define MR_AGENT_AGENT_HEALTH_H

#include <stddef.h>

#include "api.h"

struct mr_script_set;

/* Writes the first line of /healthz (no newline) into buf: "degraded: script
 * NAME disabled (WHY) since TIME" while a script of h is disabled (the one
 * disabled longest; the lines below name the others), else the degraded
 * line a script set, else "ok". */
void mr_agent_health_line(const struct mr_script_set *h, char *buf, size_t len);

#endif
