/* bpf_errors.c - libbpf message routing and human-readable BPF failure hints. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <bpf/libbpf.h>

#include "kernel/bpf_errors.h"

static int print_when_debugging(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	const char *debug = getenv("MOONROVER_DEBUG");

	if (!debug || !*debug || (level == LIBBPF_DEBUG && debug[0] != '2'))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void mr_kernel_bpf_log_setup(void)
{
	libbpf_set_print(print_when_debugging);
}

const char *mr_kernel_bpf_hint(int err)
{
	switch (-err) {
	case EPERM:
	case EACCES:
		return "permission denied: needs " MR_KERNEL_PRIVILEGES;
	case ENOENT:
		return "a kernel feature the program needs is missing (run `moonrover check`)";
	case EINVAL:
		return "the kernel rejected the program (run `moonrover check`; MOONROVER_DEBUG=2 shows the verifier log)";
	case ENOMEM:
	case E2BIG:
		return "not enough kernel memory for the BPF maps";
	default:
		return "run `moonrover check` to see what this machine supports";
	}
}
