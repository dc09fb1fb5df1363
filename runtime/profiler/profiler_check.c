/* profiler_check.c - `moonrover check`'s probe of the CFI unwinder: the
 * profiler's programs with the table walker in (bpf_loop, maps of maps,
 * bpf_task_pt_regs), loaded for real, which is what the kernel may refuse. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "api_test.h"
#include "kernel/bpf_errors.h"
#include "profiler/profiler_internal.h"
#include "profiler.skel.h"

int mr_profiler_check_cfi(char *detail, size_t len)
{
	struct profiler_bpf *skel = profiler_bpf__open();
	int rc;

	if (!skel) {
		snprintf(detail, len, "cannot open the profiler's BPF object: %s", strerror(errno));
		return 0;
	}
	skel->rodata->cfi_unwind = true;
	rc = profiler_bpf__load(skel);
	profiler_bpf__destroy(skel);
	if (rc != 0) {
		snprintf(detail, len, "the kernel refused the unwind-table walker: %s (%s)", strerror(-rc),
			 mr_kernel_bpf_hint(rc));
		return rc == -EPERM || rc == -EACCES ? -EPERM : 0;
	}
	snprintf(detail, len,
		 "in use: user stacks by unwind tables from .eh_frame (--unwind fp: frame pointers only)");
	return 1;
}
