/* bpf_log.h - routes libbpf's own messages: silent unless MOONROVER_DEBUG is set,
 * because the agent reports BPF failures itself in one clear line. */
#ifndef MR_BPF_LOG_H
#define MR_BPF_LOG_H

void mr_bpf_log_setup(void);
/* Describes a BPF load or attach failure (a negative errno) for a person. */
const char *mr_bpf_error_hint(int err);

#endif
