/* bpf_errors.h - routes libbpf's own messages: silent unless MOONROVER_DEBUG is set,
 * because the agent reports BPF failures itself in one clear line. */
#ifndef MR_KERNEL_BPF_ERRORS_H
#define MR_KERNEL_BPF_ERRORS_H

void mr_kernel_bpf_log_setup(void);
/* Describes a BPF load or attach failure (a negative errno) for a person. */
const char *mr_kernel_bpf_hint(int err);

#endif
