// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bench.bpf.c - the event-path benchmark's source: one struct mr_bench_event
 * per getppid() system call of one process (bench_pid), from raw_tp/sys_enter,
 * with the same wakeup policy as the real streams. Loaded only by
 * mr_data_plane_open_bench (runtime/api_test.h). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "arch.bpf.h"
#include "bench.h"
#include "map_helpers.bpf.h"

const volatile __s32 bench_pid = 0;
/* Ring fill level above which a submit wakes the consumer (set by the
 * runtime to a quarter of the ring); below it the consumer's timer drains. */
const volatile __u64 wakeup_bytes = 1 << 20;

/* Events lost because the ring was full. */
__u64 dropped;
/* Numbers the calls, so that every loss shows as a gap. Not atomic: the
 * generator makes its calls from one thread. */
__u64 next_seq;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} bench_events SEC(".maps");

SEC("raw_tp/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct mr_bench_event *e;
	__u64 seq;

	if (id != MR_NR_GETPPID || (__s32)(pid_tgid >> 32) != bench_pid)
		return 0;
	seq = next_seq++;
	e = bpf_ringbuf_reserve(&bench_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->pid = pid_tgid >> 32;
	e->tid = (__s32)pid_tgid;
	e->seq = seq;
	__builtin_memset(e->pad, 0, sizeof(e->pad));
	bpf_ringbuf_submit(e, mr_ring_wakeup(&bench_events, wakeup_bytes));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
