// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* probe.bpf.c - the smallest program of each kind the agent relies on, loaded
 * one at a time by `moonrover check` to find out what this kernel allows. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile __u32 self_tgid;
__u64 hits;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} probe_ring SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_getppid")
int probe_tracepoint(void *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(probe_tp_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (next->pid)
		__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("perf_event")
int probe_perf_event(struct bpf_perf_event_data *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(probe_uprobe)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

/* A raw tracepoint needs no tracefs, so this checks the ring buffer alone. */
SEC("raw_tp/sys_enter")
int probe_ringbuf(void *ctx)
{
	__u64 *slot;

	if (bpf_get_current_pid_tgid() >> 32 != self_tgid)
		return 0;
	slot = bpf_ringbuf_reserve(&probe_ring, sizeof(*slot), 0);

	if (!slot)
		return 0;
	*slot = bpf_ktime_get_ns();
	bpf_ringbuf_submit(slot, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
