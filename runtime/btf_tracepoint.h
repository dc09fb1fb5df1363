/* btf_tracepoint.h - what the running kernel's BTF says about a BTF-typed
 * tracepoint, for choosing between program variants before loading. */
#ifndef MR_BTF_TRACEPOINT_H
#define MR_BTF_TRACEPOINT_H

/* The number of arguments tracepoint name (e.g. "sched_process_exit")
 * passes to tp_btf programs, or a negative errno: -ENOENT when the kernel
 * has no BTF or no such tracepoint. */
int mr_btf_tracepoint_args(const char *name);

#endif
