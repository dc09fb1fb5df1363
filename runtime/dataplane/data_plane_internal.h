/* data_plane_internal.h - the data plane's state, shared by data_plane.c
 * (options, life cycle), data_plane_bpf.c (BPF objects and ring buffers),
 * data_plane_thread.c (the draining thread), data_plane_streams.c (the
 * consumer's side of the queues) and data_plane_conns.c (the kernel's
 * connection map). */
#ifndef MR_DATAPLANE_DATA_PLANE_INTERNAL_H
#define MR_DATAPLANE_DATA_PLANE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "api_test.h"

struct bench_bpf;
struct net_bpf;
struct process_bpf;
struct ring_buffer;
struct mr_spsc_queue;
struct mr_byte_queue;
struct mr_pid_table;

struct mr_data_plane {
	struct mr_data_plane_opts opts; /* with defaults applied and sizes rounded */
	struct process_bpf *process;
	int32_t bench_pid;                             /* mr_data_plane_open_bench's process, or 0 */
	struct bench_bpf *bench;                       /* only with a bench_pid */
	struct net_bpf *net;                           /* only with MR_DATA_PLANE_NET */
	int32_t *net_pids;                             /* a copy of opts.net_pids */
	struct ring_buffer *rings;                     /* one manager for every stream's ring */
	int ring_fds[MR_STREAM_COUNT];                 /* -1 for a stream that is off */
	struct mr_spsc_queue *queues[MR_STREAM_COUNT]; /* NULL for a stream that is off, and for NET */
	struct mr_byte_queue *net_queue;               /* MR_STREAM_NET's records, or NULL */
	uint32_t net_budget;                           /* net records this drain round may still take */
	uint64_t net_check_ns;      /* data_plane_thread.c: when the net queue's use was last looked at */
	uint64_t net_check_head;    /* its pushed bytes then */
	uint64_t net_trim_head;     /* its pushed bytes at its last trim */
	struct mr_pid_table *tally; /* mr_data_plane_drain_in_c's counts */
	int notify_fd;              /* eventfd: a queue got events */
	int stop_fd;                /* eventfd: the thread must stop */
	int epoll_fd;               /* the thread waits on the rings and stop_fd */
	atomic_int stop;
	pthread_t thread;
	int thread_running;
	int attached;
	void *conn_values;      /* values of the kernel's conns map, for data_plane_conns.c's walk */
	uint64_t conn_count;    /* its entries at the last walk */
	uint64_t conn_count_ns; /* when that was (CLOCK_MONOTONIC), 0: never */
};

/* Net records taken from the kernel per drain round. libbpf consumes a ring
 * until it finds it empty, which a busy connection's ring never is: without
 * a bound the other rings (connection events) and the consumer's
 * notification would wait for a lull in the traffic. */
#define MR_DATA_PLANE_NET_ROUND 4096

/* data_plane_bpf.c */
int mr_data_plane_load(struct mr_data_plane *d, char *err, size_t errlen);
int mr_data_plane_attach(struct mr_data_plane *d, char *err, size_t errlen);
uint64_t mr_data_plane_kernel_drops(const struct mr_data_plane *d, uint32_t stream);
int mr_data_plane_set_verdict(struct mr_data_plane *d, uint64_t conn, uint8_t verdict);
int mr_data_plane_set_skip(struct mr_data_plane *d, uint64_t conn, uint32_t direction, uint64_t skip_to);
int mr_data_plane_set_target(struct mr_data_plane *d, int32_t pid, int add);
void mr_data_plane_unload(struct mr_data_plane *d);

/* data_plane_conns.c: allocates the walk's buffer, once the net object is open */
int mr_data_plane_conns_prepare(struct mr_data_plane *d);

/* data_plane_thread.c */
int mr_data_plane_thread_prepare(struct mr_data_plane *d, char *err, size_t errlen);
int mr_data_plane_thread_start(struct mr_data_plane *d, char *err, size_t errlen);
void mr_data_plane_thread_stop(struct mr_data_plane *d);

#endif
