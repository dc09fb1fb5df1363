/* events.h - the event records of the always-on streams, shared by the BPF
 * programs, the runtime and Lua (through the preprocessed runtime/api.h).
 * Fixed layout, 64 bytes, no pointers: batches are arrays of these. */
#ifndef MR_BPF_EVENTS_H
#define MR_BPF_EVENTS_H

#define MR_COMM_LEN 16 /* the kernel's TASK_COMM_LEN */

enum mr_process_event_kind {
	MR_PROCESS_EXEC = 1, /* a process replaced its image (execve) */
	MR_PROCESS_EXIT = 2, /* a process ended (its last thread exited) */
	MR_PROCESS_FORK = 3, /* a new process was created (not a thread) */
};

/* One process lifecycle event. Times are CLOCK_MONOTONIC nanoseconds. */
struct mr_process_event {
	__u64 ts_ns;     /* when it happened */
	__u64 start_ns;  /* when the process started (exit: lifetime = ts_ns - start_ns) */
	__u32 kind;      /* enum mr_process_event_kind */
	__s32 pid;       /* the process (thread group) id */
	__s32 ppid;      /* its parent; for fork, the process that forked */
	__s32 exit_code; /* exit: the status as wait() reports it; 0 otherwise */
	__u32 uid;
	__u32 seq; /* per-CPU sequence number, to spot losses in tests */
	char comm[MR_COMM_LEN];
	__u64 reserved;
};

#endif
