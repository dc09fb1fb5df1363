/* btf.h - what the kernel's BTF (/sys/kernel/btf/vmlinux) tells: whether
 * it is there at all (CO-RE and tp_btf need it), and the arguments of a
 * tracepoint as tp_btf programs receive them. */
#ifndef MR_KERNEL_BTF_H
#define MR_KERNEL_BTF_H

#include <stddef.h>

/* 0 when the kernel's BTF is readable; else a negative errno and why in
 * detail (with what to do). */
int mr_kernel_btf_check(char *detail, size_t len);
/* The number of arguments tp_btf programs of tracepoint name receive, or a
 * negative errno (-ENOENT: no such tracepoint in the BTF). */
int mr_kernel_tracepoint_args(const char *name);

#endif
