/* agent_status.h - the agent's answer to `moonrover reload`: the status
 * file beside its pid file, removed when the agent takes the pid file,
 * written after the first start and after each reload, removed when it
 * stops, and read by the command that asked. The file's functions are in
 * api_test.h (struct mr_agent_status). */
#ifndef MR_AGENT_AGENT_STATUS_H
#define MR_AGENT_AGENT_STATUS_H

#include <stdint.h>

#include "api_test.h"

struct mr_script_set;

/* The status of this process for the scripts' last (re)load, which began
 * at began_ns (CLOCK_MONOTONIC). */
void mr_agent_status_of(const struct mr_script_set *h, uint64_t began_ns, struct mr_agent_status *out);

#endif
