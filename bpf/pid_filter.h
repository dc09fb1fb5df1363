/* pid_filter.h - the size of the set of processes a BPF program is limited
 * to (pid_filter.bpf.h's targets map), shared with the runtime and Lua,
 * which refuse a longer list. */
#ifndef MR_BPF_PID_FILTER_H
#define MR_BPF_PID_FILTER_H

#define MR_PID_FILTER_MAX 4096

#endif
