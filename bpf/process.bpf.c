// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* process.bpf.c - process lifecycle events for the data plane's process
 * stream: EXEC (tp_btf/sched_process_exec), FORK of a new process, not a
 * thread (tp_btf/sched_process_fork) and EXIT of the whole process
 * (tp_btf/sched_process_exit). BTF tracepoints need no tracefs.
 *
 * EXIT: on kernels whose sched_process_exit passes group_dead (6.16 and
 * later), on_exit reports the thread that brought signal->live to 0, as the
 * kernel computed it atomically: exactly once, when the last thread is gone.
 * Older kernels get on_exit_leader instead: the thread group leader's exit,
 * which comes early when the leader ends before its other threads. The
 * runtime picks one of the two (autoload) from the tracepoint's BTF. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "map_helpers.bpf.h"

/* Ring fill level above which a submit wakes the consumer (set by the
 * runtime to a quarter of the ring); below it the consumer's timer drains. */
const volatile __u64 wakeup_bytes = 1 << 20;

/* Events lost because the ring was full. */
__u64 dropped;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} process_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cpu_seq SEC(".maps");

static __always_inline __u32 next_seq(void)
{
	__u32 zero = 0;
	__u32 *seq = bpf_map_lookup_elem(&cpu_seq, &zero);

	if (!seq)
		return 0;
	return (*seq)++;
}

/* One event about task's process. Start time and name come from the thread
 * group leader: a thread may rename itself, and the leader started first. */
static __always_inline void emit(__u32 kind, struct task_struct *task, __s32 ppid, __s32 exit_code)
{
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);
	struct mr_process_event *e;

	e = bpf_ringbuf_reserve(&process_events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->start_ns = BPF_CORE_READ(leader, start_time);
	e->kind = kind;
	e->pid = BPF_CORE_READ(task, tgid);
	e->ppid = ppid;
	e->exit_code = exit_code;
	e->uid = BPF_CORE_READ(task, cred, uid.val);
	e->seq = next_seq();
	__builtin_memset(e->comm, 0, sizeof(e->comm));
	bpf_core_read_str(e->comm, sizeof(e->comm), &leader->comm);
	e->reserved = 0;
	bpf_ringbuf_submit(e, mr_ring_wakeup(&process_events, wakeup_bytes));
}

/* The task has its new image and name by now. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	emit(MR_PROCESS_EXEC, task, BPF_CORE_READ(task, real_parent, tgid), 0);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	if (BPF_CORE_READ(child, pid) != BPF_CORE_READ(child, tgid))
		return 0;
	emit(MR_PROCESS_FORK, child, BPF_CORE_READ(parent, tgid), 0);
	return 0;
}

static __always_inline void emit_exit(struct task_struct *task)
{
	emit(MR_PROCESS_EXIT, task, BPF_CORE_READ(task, real_parent, tgid), BPF_CORE_READ(task, exit_code));
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task, bool group_dead)
{
	if (group_dead)
		emit_exit(task);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit_leader, struct task_struct *task)
{
	if (BPF_CORE_READ(task, pid) == BPF_CORE_READ(task, tgid))
		emit_exit(task);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
