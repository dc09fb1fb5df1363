/* kernel_compat.bpf.h - CO-RE shims for what differs between the kernel
 * versions moonrover runs on: each field that was renamed or moved is read
 * here, in one place, whichever name this kernel has. */
#ifndef MR_BPF_KERNEL_COMPAT_H
#define MR_BPF_KERNEL_COMPAT_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

/* Kernels before 5.14 call the task state "state" instead of "__state". */
struct task_struct___pre_5_14 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline long mr_task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre_5_14 *)t, state);
}

#endif
