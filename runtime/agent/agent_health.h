/* agent_health.h - the agent's health line on /healthz ("ok" or "degraded:
 * ..."), which scripts set through api.h (mr_agent_health_degrade and
 * mr_agent_health_restore). */
#ifndef MR_AGENT_AGENT_HEALTH_H
#define MR_AGENT_AGENT_HEALTH_H

#include "api.h"

/* "ok", or the degraded line (no newline); valid until the next change. */
const char *mr_agent_health_status(void);

#endif
