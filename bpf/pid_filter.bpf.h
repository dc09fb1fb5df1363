/* pid_filter.bpf.h - which processes a BPF program looks at: all but its
 * own (exclude_tgid), or, with filter_pids, only those in the targets map.
 * The runtime sets both in the skeleton's rodata and fills targets before
 * it attaches. Included once by each program that filters. */
#ifndef MR_BPF_PID_FILTER_BPF_H
#define MR_BPF_PID_FILTER_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "pid_filter.h"

const volatile bool filter_pids = false;
/* The agent or profiler itself. */
const volatile __s32 exclude_tgid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MR_PID_FILTER_MAX);
	__type(key, __s32);
	__type(value, __u8);
} targets SEC(".maps");

/* Whether the process tgid is looked at; never the idle task (0). */
static __always_inline bool mr_pid_wanted(__s32 tgid)
{
	if (tgid == exclude_tgid || tgid == 0)
		return false;
	return !filter_pids || bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

#endif
