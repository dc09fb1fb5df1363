// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* profiler.bpf.c - on-CPU sampling (perf_event, cpu-clock) and off-CPU time
 * (tp_btf/sched_switch), aggregated in the kernel per (pid, user stack,
 * kernel stack). Counts go to one of two maps chosen by `active`, so the
 * runtime can read and clear one while the other keeps counting. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "kernel_compat.bpf.h"
#include "kernel_defs.bpf.h"
#include "map_helpers.bpf.h"
#include "pid_filter.bpf.h"
#include "profiler.h"
#include "unwind_walk.bpf.h"

const volatile bool kernel_stacks = true;
/* User stacks by unwind tables (unwind_walk.bpf.h) instead of frame pointers. */
const volatile bool cfi_unwind = false;

/* Which counts map the programs write to: flipped by the runtime. */
volatile __u32 active;
/* CLOCK_MONOTONIC time past which nothing is counted (0: no end), set by the
 * runtime at start: a profile covers its duration however late it is read. */
volatile __u64 stop_ns;
struct mr_profiler_counters counters;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct mr_stack_trace);
} stacks SEC(".maps");

struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct mr_stack_key);
	__type(value, struct mr_stack_value);
};
struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");

/* The maps above allocate on demand from per-CPU caches that the kernel
 * refills asynchronously; several allocations in a row (the first samples,
 * a burst) can find one empty and fail with ENOMEM. What does not fit then
 * goes to these small preallocated maps, which cannot fail for lack of
 * memory, so nothing is lost to it. The runtime reads both. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct mr_stack_trace);
} stacks_spill SEC(".maps");

struct counts_spill_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct mr_stack_key);
	__type(value, struct mr_stack_value);
};
struct counts_spill_map counts_spill0 SEC(".maps");
struct counts_spill_map counts_spill1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mr_stack_trace);
} scratch SEC(".maps");

/* Processes announced to the runtime, by tgid, with their state. */
enum { SEEN_CURRENT = 1, SEEN_BEFORE_EXEC = 2 };

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, __s32);
	__type(value, __u8);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} notices SEC(".maps");

/* Where and since when a thread is blocked. */
struct blocked_since {
	__u64 ts;
	struct mr_stack_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __s32);
	__type(value, struct blocked_since);
} blocked SEC(".maps");

static __always_inline void notify(__u32 kind, __s32 pid, __u64 addr)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);
	struct mr_notice *n;

	n = bpf_ringbuf_reserve(&notices, sizeof(*n), 0);
	if (!n) {
		__sync_fetch_and_add(&counters.lost_notify, 1);
		return;
	}
	n->kind = kind;
	n->pid = pid;
	n->addr = addr;
	bpf_core_read_str(n->comm, sizeof(n->comm), &leader->comm);
	bpf_ringbuf_submit(n, 0);
}

/* Tells the runtime about a process the first time it is sampled, and
 * again at its first sample after an exec. A process still runs a little
 * after its exit was announced: a sample then must not announce it anew, or
 * the runtime would keep it forever, waiting for an exit already past. */
static __always_inline void note_process(__s32 pid)
{
	struct task_struct *leader = BPF_CORE_READ(bpf_get_current_task_btf(), group_leader);
	__u8 fresh = SEEN_CURRENT;
	__u8 *state;

	if (BPF_CORE_READ(leader, flags) & PF_EXITING)
		return;
	state = bpf_map_lookup_elem(&seen, &pid);
	if (state && *state == SEEN_CURRENT)
		return;
	if (state)
		*state = SEEN_CURRENT;
	if (state || bpf_map_update_elem(&seen, &pid, &fresh, BPF_NOEXIST) == 0)
		notify(MR_NOTICE_NEW, pid, 0);
}

static __always_inline __u64 hash_stack(const struct mr_stack_trace *st, __u32 depth)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (__u32 i = 0; i < MR_MAX_STACK_DEPTH; i++) {
		if (i >= depth)
			break;
		h ^= st->ips[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/* Stores the depth frames of st once; their hash, 0 when lost (counted). */
static __always_inline __u64 store_stack(struct mr_stack_trace *st, __u32 depth)
{
	__u64 h = hash_stack(st, depth);
	long err = mr_map_insert_spill(&stacks, &stacks_spill, &h, st);

	if (err) {
		__sync_fetch_and_add(err == -E2BIG ? &counters.lost_stack_full : &counters.lost_stack_nomem,
				     1);
		return 0;
	}
	return h;
}

/* Takes the current stack (user or kernel) by the kernel's walker (frame
 * pointers for user stacks) and stores it: its hash, 0 when there is none. */
static __always_inline __u64 take_stack(void *ctx, __u64 flags)
{
	__u32 zero = 0;
	struct mr_stack_trace *st = bpf_map_lookup_elem(&scratch, &zero);
	long len;

	if (!st)
		return 0;
	len = bpf_get_stack(ctx, st->ips, sizeof(st->ips), flags);
	if (len <= 0) {
		if (len != -EFAULT && len != 0 && flags)
			__sync_fetch_and_add(&counters.lost_user_stack, 1);
		return 0;
	}
	return store_stack(st, len / sizeof(__u64));
}

/* Counts what a walk of depth frames (w) did. */
static __always_inline void count_walk(const struct walk *w, long depth)
{
	__sync_fetch_and_add(w->pending ? &counters.unwind_fp_stacks : &counters.unwind_cfi_stacks, 1);
	if (w->fp_frames)
		__sync_fetch_and_add(&counters.unwind_fp_frames, w->fp_frames);
	if (depth >= MR_MAX_STACK_DEPTH)
		__sync_fetch_and_add(&counters.unwind_truncated, 1);
}

/* The user stack, by unwind tables when the process has them. */
static __always_inline __u64 take_user_stack(void *ctx, __s32 pid)
{
	__u32 zero = 0;
	struct mr_stack_trace *st;
	struct walk *w;
	long depth;

	if (!cfi_unwind)
		return take_stack(ctx, BPF_F_USER_STACK);
	st = bpf_map_lookup_elem(&scratch, &zero);
	w = bpf_map_lookup_elem(&walks, &zero);
	if (!st || !w)
		return 0;
	depth = unwind_user(pid, st, w);
	if (depth < 0) {
		__sync_fetch_and_add(&counters.unwind_fp_stacks, 1);
		return take_stack(ctx, BPF_F_USER_STACK);
	}
	if (should_ask_maps(pid, w))
		notify(MR_NOTICE_MAPS, pid, 0);
	if (w->ask_addr)
		notify(MR_NOTICE_TABLE, pid, w->ask_addr);
	if (depth == 0)
		return 0;
	count_walk(w, depth);
	return store_stack(st, depth);
}

/* Counts apart per thread (the key's tid) only when asked. */
const volatile bool per_thread = false;

/* Both programs run in the thread sampled (sched_switch before it switches);
 * each passes the tid it already has. */
static __always_inline void take_key(void *ctx, struct mr_stack_key *key, __s32 pid, __s32 tid)
{
	key->pid = pid;
	key->tid = per_thread ? tid : 0;
	key->user_stack = take_user_stack(ctx, pid);
	key->kernel_stack = kernel_stacks ? take_stack(ctx, 0) : 0;
}

/* The count of key in map, or in spill; created (in spill when map has no
 * memory) when it is in neither. NULL when it cannot be, counted. */
static __always_inline struct mr_stack_value *value_of(void *map, void *spill, const struct mr_stack_key *key)
{
	struct mr_stack_value zero = {}, *v;
	long err;

	v = mr_map_lookup_or_insert(map, spill, key, &zero, &err);
	if (v)
		return v;
	if (err && err != -E2BIG)
		__sync_fetch_and_add(&counters.lost_counts_nomem, 1);
	else /* full, or (err 0) deleted by a concurrent drain */
		__sync_fetch_and_add(&counters.lost_counts_full, 1);
	return NULL;
}

static __always_inline void add_to(void *map, void *spill, const struct mr_stack_key *key, __u64 nanos)
{
	struct mr_stack_value *v = value_of(map, spill, key);

	if (!v)
		return;
	__sync_fetch_and_add(&v->count, 1);
	if (nanos)
		__sync_fetch_and_add(&v->nanos, nanos);
}

static __always_inline void count(const struct mr_stack_key *key, __u64 nanos)
{
	__sync_fetch_and_add(&counters.samples, 1);
	if (!counters.first_sample_ns)
		counters.first_sample_ns = bpf_ktime_get_ns();
	if (active)
		add_to(&counts1, &counts_spill1, key, nanos);
	else
		add_to(&counts0, &counts_spill0, key, nanos);
}

static __always_inline bool past_stop(__u64 now)
{
	return stop_ns && now > stop_ns;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__s32 tgid = id >> 32;
	struct mr_stack_key key;

	if (past_stop(bpf_ktime_get_ns()))
		return 0;
	if ((__u32)id == 0) {
		__sync_fetch_and_add(&counters.idle_samples, 1);
		return 0;
	}
	if (!mr_pid_wanted(tgid))
		return 0;
	note_process(tgid);
	take_key(ctx, &key, tgid, (__s32)id);
	count(&key, 0);
	return 0;
}

/* Switch-out of a blocked thread: remember where and when. Switch-in: add
 * the time it was off the CPU to the stack it blocked in. Three arguments
 * only: the fourth (prev_state) exists since Linux 5.18. */
SEC("tp_btf/sched_switch")
int BPF_PROG(off_cpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__s32 prev_tid = prev->pid, prev_tgid = prev->tgid, next_tid = next->pid;
	long prev_state = mr_task_state(prev);
	struct blocked_since *b, rec;
	__u64 now = bpf_ktime_get_ns();
	bool ended = past_stop(now);

	if (ended)
		now = stop_ns; /* a wait that spans the end counts up to the end */
	if (!ended && prev_tid && !preempt && prev_state != TASK_RUNNING && mr_pid_wanted(prev_tgid)) {
		note_process(prev_tgid);
		rec.ts = now;
		take_key(ctx, &rec.key, prev_tgid, prev_tid);
		if (bpf_map_update_elem(&blocked, &prev_tid, &rec, BPF_ANY) != 0)
			__sync_fetch_and_add(&counters.lost_offcpu_start, 1);
	}
	if (!next_tid)
		return 0;
	b = bpf_map_lookup_elem(&blocked, &next_tid);
	if (!b)
		return 0;
	rec = *b;
	bpf_map_delete_elem(&blocked, &next_tid);
	if (now > rec.ts)
		count(&rec.key, now - rec.ts);
	return 0;
}

/* A process that was already sampled execs: its mappings change, so its
 * next sample announces it again. BTF-typed tracepoints need no tracefs. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task)
{
	__s32 tgid = task->tgid;
	__u8 *state = bpf_map_lookup_elem(&seen, &tgid);

	if (state)
		*state = SEEN_BEFORE_EXEC;
	return 0;
}

/* The process is gone: a new one may get its pid and must be seen as new. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__s32 tgid = task->tgid;
	__s32 tid = task->pid;

	bpf_map_delete_elem(&blocked, &tid);
	if (tgid == tid && bpf_map_delete_elem(&seen, &tgid) == 0)
		notify(MR_NOTICE_EXIT, tgid, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
