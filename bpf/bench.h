/* bench.h - the record of the event-path benchmark's stream (bench.bpf.c),
 * declared for specs and benchmarks by runtime/api_test.h. */
#ifndef MR_BPF_BENCH_H
#define MR_BPF_BENCH_H

/* A synthetic event: one getppid() call of the benchmark's process. */
struct mr_bench_event {
	__u64 ts_ns;
	__s32 pid;
	__s32 tid;
	__u64 seq;
	__u64 pad[5];
};

#endif
