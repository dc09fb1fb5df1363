/* data_plane.c - the data plane's life cycle: options, queues and eventfds
 * (open), attaching and the draining thread (start), tear-down (close). The
 * BPF side is in data_plane_bpf.c, the thread in data_plane_thread.c, the
 * consumer's side in data_plane_streams.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "api_test.h"
#include "base/log.h"
#include "kernel/bpf_errors.h"
#include "dataplane/data_plane_internal.h"
#include "base/byte_queue.h"
#include "base/spsc_queue.h"
#include "base/pid_table.h"
#include "pid_filter.h"

#define DEFAULT_QUEUE_CAPACITY 65536u
#define MAX_QUEUE_CAPACITY (1u << 24)
/* A ring's pages are all resident from its creation, twice over (the
 * kernel maps its data twice, end to end), busy or idle: 512 KiB is 8192
 * process events, and the thread drains a ring once a quarter of it is
 * full or every drain_ms. */
#define DEFAULT_RING_BYTES (512u << 10)
#define MIN_RING_BYTES 4096u
#define MAX_RING_BYTES (1u << 30)
#define DEFAULT_DRAIN_MS 10u
#define MAX_DRAIN_MS 60000u
/* The net queue absorbs the scripts' lag: 8 MiB is about 50 ms of
 * records at 150 MB/s (wrk against nginx on this 2-core machine, both sides
 * traced); a larger one costs its size in resident memory once traffic has
 * cycled through it, idle or not. */
#define DEFAULT_NET_QUEUE_BYTES (8u << 20)
/* The net ring by default: this much per possible CPU (each CPU's programs
 * write into it), rounded up to a power of two. */
#define NET_RING_PER_CPU (512u << 10)
/* The smallest net ring: two of the largest records. */
#define MIN_NET_RING_BYTES (2u * (MR_NET_PAYLOAD_MAX + 64u))
/* The tcp stream's queue holds this fraction of queue_capacity: a
 * connection has a few events and many data records. */
#define TCP_QUEUE_FRACTION 8u
#define MAX_NET_QUEUE_BYTES (1u << 30)
#define DEFAULT_NET_CONNECTIONS 65536u
#define MAX_NET_CONNECTIONS (1u << 22)
#define MAX_NET_PIDS ((uint32_t)MR_PID_FILTER_MAX)
#define KNOWN_FLAGS ((uint32_t)(MR_DATA_PLANE_NET | MR_DATA_PLANE_NO_PROCESS))

static uint32_t round_up_pow2(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* The net ring: as asked, or NET_RING_PER_CPU per possible CPU. */
static int net_ring_size(struct mr_data_plane_opts *o, char *err, size_t errlen)
{
	int cpus = libbpf_num_possible_cpus();

	if (o->net_ring_bytes > MAX_RING_BYTES) {
		snprintf(err, errlen, "invalid network options: the network ring at most %u bytes",
			 MAX_RING_BYTES);
		return -EINVAL;
	}
	if (!o->net_ring_bytes && cpus < 0) {
		snprintf(err, errlen, "cannot count the possible CPUs: %s", strerror(-cpus));
		return cpus;
	}
	if (!o->net_ring_bytes)
		o->net_ring_bytes = (uint32_t)cpus * NET_RING_PER_CPU < MAX_RING_BYTES
					    ? (uint32_t)cpus * NET_RING_PER_CPU
					    : MAX_RING_BYTES;
	if (o->net_ring_bytes < MIN_NET_RING_BYTES)
		o->net_ring_bytes = MIN_NET_RING_BYTES;
	o->net_ring_bytes = round_up_pow2(o->net_ring_bytes);
	return 0;
}

/* The network options: defaults filled in, limits checked. */
static int normalize_net(struct mr_data_plane_opts *o, char *err, size_t errlen)
{
	if (o->net_payload_bytes > MR_NET_PAYLOAD_MAX || o->net_queue_bytes > MAX_NET_QUEUE_BYTES ||
	    o->net_max_connections > MAX_NET_CONNECTIONS || o->net_npids > MAX_NET_PIDS ||
	    (o->net_npids && !o->net_pids)) {
		snprintf(err, errlen,
			 "invalid network options: payload at most %u bytes, queue at most %u bytes, at most "
			 "%u connections and %u processes",
			 MR_NET_PAYLOAD_MAX, MAX_NET_QUEUE_BYTES, MAX_NET_CONNECTIONS, MAX_NET_PIDS);
		return -EINVAL;
	}
	if (!o->net_payload_bytes)
		o->net_payload_bytes = MR_NET_PAYLOAD_DEFAULT;
	o->net_queue_bytes = round_up_pow2(o->net_queue_bytes ? o->net_queue_bytes : DEFAULT_NET_QUEUE_BYTES);
	if (o->net_queue_bytes < MIN_RING_BYTES)
		o->net_queue_bytes = MIN_RING_BYTES;
	if (!o->net_max_connections)
		o->net_max_connections = DEFAULT_NET_CONNECTIONS;
	return net_ring_size(o, err, errlen);
}

/* Fills in defaults and rounds sizes up; returns 0 or -EINVAL with why. */
static int normalize(struct mr_data_plane_opts *o, char *err, size_t errlen)
{
	if (o->flags & ~KNOWN_FLAGS) {
		snprintf(err, errlen, "invalid data plane options: unknown flags 0x%x", o->flags);
		return -EINVAL;
	}
	if ((o->flags & MR_DATA_PLANE_NO_PROCESS) && !(o->flags & MR_DATA_PLANE_NET)) {
		snprintf(err, errlen,
			 "invalid data plane options: without the process stream, only the network's");
		return -EINVAL;
	}
	if (o->queue_capacity > MAX_QUEUE_CAPACITY || o->ring_bytes > MAX_RING_BYTES ||
	    o->drain_ms > MAX_DRAIN_MS) {
		snprintf(err, errlen,
			 "invalid data plane options: queue_capacity at most %u, ring_bytes at "
			 "most %u, drain_ms at most %u",
			 MAX_QUEUE_CAPACITY, MAX_RING_BYTES, MAX_DRAIN_MS);
		return -EINVAL;
	}
	o->queue_capacity = round_up_pow2(o->queue_capacity ? o->queue_capacity : DEFAULT_QUEUE_CAPACITY);
	o->ring_bytes = round_up_pow2(o->ring_bytes ? o->ring_bytes : DEFAULT_RING_BYTES);
	if (o->ring_bytes < MIN_RING_BYTES)
		o->ring_bytes = MIN_RING_BYTES;
	if (!o->drain_ms)
		o->drain_ms = DEFAULT_DRAIN_MS;
	return (o->flags & MR_DATA_PLANE_NET) ? normalize_net(o, err, errlen) : 0;
}

static int make_net_queues(struct mr_data_plane *d)
{
	uint32_t events = d->opts.queue_capacity / TCP_QUEUE_FRACTION;

	d->queues[MR_STREAM_TCP] = mr_spsc_queue_new(events > 64 ? events : 64, sizeof(struct mr_tcp_event));
	d->net_queue = mr_byte_queue_new(d->opts.net_queue_bytes);
	return d->queues[MR_STREAM_TCP] && d->net_queue ? 0 : -ENOMEM;
}

static int make_queues(struct mr_data_plane *d)
{
	uint32_t cap = d->opts.queue_capacity;

	if (!(d->opts.flags & MR_DATA_PLANE_NO_PROCESS)) {
		d->queues[MR_STREAM_PROCESS] = mr_spsc_queue_new(cap, sizeof(struct mr_process_event));
		if (!d->queues[MR_STREAM_PROCESS])
			return -ENOMEM;
	}
	if (d->bench_pid > 0) {
		d->queues[MR_STREAM_BENCH] = mr_spsc_queue_new(cap, sizeof(struct mr_bench_event));
		if (!d->queues[MR_STREAM_BENCH])
			return -ENOMEM;
	}
	if (d->opts.flags & MR_DATA_PLANE_NET) {
		int rc = make_net_queues(d);

		if (rc != 0)
			return rc;
	}
	d->tally = mr_pid_table_new(sizeof(uint64_t));
	return d->tally ? 0 : -ENOMEM;
}

static struct mr_data_plane *new_plane(const struct mr_data_plane_opts *o)
{
	struct mr_data_plane *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->opts = *o;
	if (o->net_npids) { /* the caller's array need not outlive the call */
		d->net_pids = calloc(o->net_npids, sizeof(*d->net_pids));
		if (!d->net_pids) {
			free(d);
			return NULL;
		}
		memcpy(d->net_pids, o->net_pids, o->net_npids * sizeof(*d->net_pids));
	}
	d->opts.net_pids = d->net_pids;
	d->notify_fd = d->stop_fd = d->epoll_fd = -1;
	for (int i = 0; i < MR_STREAM_COUNT; i++)
		d->ring_fds[i] = -1;
	atomic_init(&d->stop, 0);
	return d;
}

static int set_up(struct mr_data_plane *d, char *err, size_t errlen)
{
	int e = make_queues(d);

	if (e != 0) {
		snprintf(err, errlen, "cannot allocate the data plane's queues: %s", strerror(-e));
		return e;
	}
	d->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (d->notify_fd < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot create the data plane's eventfd: %s", strerror(-e));
		return e;
	}
	e = mr_data_plane_load(d, err, errlen);
	return e ? e : mr_data_plane_thread_prepare(d, err, errlen);
}

static mr_data_plane *open_plane(const struct mr_data_plane_opts *o, int32_t bench_pid, char *err,
				 size_t errlen)
{
	struct mr_data_plane_opts opts;
	struct mr_data_plane *d;
	int rc;

	if (!o)
		return mr_fail_null(mr_error(err, errlen, -EINVAL, "invalid data plane options: none given"));
	opts = *o;
	rc = normalize(&opts, err, errlen);
	if (rc != 0)
		return mr_fail_null(rc);
	mr_kernel_bpf_log_setup();
	d = new_plane(&opts);
	if (!d)
		return mr_fail_null(mr_error(err, errlen, -ENOMEM, "out of memory"));
	d->bench_pid = bench_pid;
	rc = set_up(d, err, errlen);
	if (rc != 0) {
		mr_data_plane_close(d);
		return mr_fail_null(rc);
	}
	return d;
}

mr_data_plane *mr_data_plane_open(const struct mr_data_plane_opts *o, char *err, size_t errlen)
{
	return open_plane(o, 0, err, errlen);
}

mr_data_plane *mr_data_plane_open_bench(const struct mr_data_plane_opts *o, int32_t bench_pid, char *err,
					size_t errlen)
{
	if (bench_pid <= 0)
		return mr_fail_null(mr_error(err, errlen, -EINVAL, "the benchmark needs a process id, not %d",
					     (int)bench_pid));
	return open_plane(o, bench_pid, err, errlen);
}

int mr_data_plane_start(mr_data_plane *d, char *err, size_t errlen)
{
	int e;

	if (d->attached) {
		snprintf(err, errlen, "the data plane is already started");
		return -EALREADY;
	}
	e = mr_data_plane_attach(d, err, errlen);
	if (e == 0)
		e = mr_data_plane_thread_start(d, err, errlen);
	return e;
}

int mr_data_plane_notify_fd(const mr_data_plane *d)
{
	return d->notify_fd;
}

int mr_data_plane_wait(mr_data_plane *d, int32_t timeout_ms)
{
	struct pollfd p = { .fd = d->notify_fd, .events = POLLIN };
	uint64_t ignored;

	if (poll(&p, 1, timeout_ms) <= 0)
		return 0; /* a timeout, or a signal for the caller to look at */
	/* Rearm; EAGAIN only if another reader got there first. */
	return read(d->notify_fd, &ignored, sizeof(ignored)) == (ssize_t)sizeof(ignored) || errno == EAGAIN;
}

static void close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

void mr_data_plane_close(mr_data_plane *d)
{
	if (!d)
		return;
	mr_data_plane_thread_stop(d);
	mr_data_plane_unload(d);
	close_fd(d->epoll_fd);
	close_fd(d->stop_fd);
	close_fd(d->notify_fd);
	for (int i = 0; i < MR_STREAM_COUNT; i++)
		mr_spsc_queue_free(d->queues[i]);
	mr_byte_queue_free(d->net_queue);
	free(d->net_pids);
	mr_pid_table_free(d->tally);
	free(d);
}
