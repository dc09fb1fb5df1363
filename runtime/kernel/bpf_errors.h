/* bpf_errors.h - routes libbpf's own messages: silent unless MOONROVER_DEBUG is set,
 * because the agent reports BPF failures itself in one clear line. */
#ifndef MR_KERNEL_BPF_ERRORS_H
#define MR_KERNEL_BPF_ERRORS_H

/* What moonrover needs to be allowed to do its work, said the same way
 * everywhere: by `moonrover check`, by commands that are refused, in hints. */
#define MR_KERNEL_PRIVILEGES \
	"root (or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE; CAP_SYSLOG too for kernel symbols)"

void mr_kernel_bpf_log_setup(void);
/* Describes a BPF load or attach failure (a negative errno) for a person. */
const char *mr_kernel_bpf_hint(int err);

#endif
