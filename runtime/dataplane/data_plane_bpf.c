/* data_plane_bpf.c - the data plane's BPF side: loads process.bpf.c (and
 * bench.bpf.c for mr_data_plane_open_bench, net.bpf.c for MR_DATA_PLANE_NET) with
 * ring sizes and wakeup watermarks from the options, opens one ring_buffer
 * manager over every stream's ring whose callback copies records into that
 * stream's queue, attaches the programs and reads the kernel-side drop
 * counters. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.skel.h"
#include "kernel/bpf_errors.h"
#include "kernel/btf.h"
#include "dataplane/data_plane_internal.h"
#include "base/byte_queue.h"
#include "base/spsc_queue.h"
#include "net.skel.h"
#include "process.skel.h"

/* A submit wakes the consumer once the ring is this full (1/4); below it
 * the thread's timer drains. Measured on a 2-core VM: a wakeup per event
 * delivers under 1 M events/s (each wakeup costs an IPI on the producer's
 * CPU), a timer drain every 10 ms over 5 M events/s at 8% of a core. */
#define WAKEUP_FRACTION 4
/* The net ring wakes its consumer once half full: a wakeup costs the
 * producer more than its share of a record, and the net ring is small (it
 * is resident twice over). Measured under wrk -t1 -c16 against nginx, both
 * ends traced, on a 1 MiB ring, with other tracers loading the machine:
 * 0.0011 wakeups per request instead of 0.0023 at a quarter, and 250 / 285
 * ns per on_recv / on_send run instead of 275 / 310; on a quiet machine the
 * 10 ms timer drains first either way (0.0012 per request at 120k
 * requests/s) and the two cost the same. Nothing lost in any run. */
#define NET_WAKEUP_FRACTION 2

static int take_record(void *ctx, void *data, size_t size)
{
	mr_spsc_queue_push(ctx, data, size);
	return 0;
}

/* Stops the ring's consumption (-EAGAIN: the thread's drain goes on with
 * another round) once the round's budget is spent. */
static int take_net_record(void *ctx, void *data, size_t size)
{
	struct mr_data_plane *d = ctx;

	mr_byte_queue_push(d->net_queue, data, size);
	return --d->net_budget == 0 ? -EAGAIN : 0;
}

static int bpf_failed(const char *what, int e, char *err, size_t errlen)
{
	snprintf(err, errlen, "cannot %s: %s (%s)", what, strerror(-e), mr_kernel_bpf_hint(e));
	return e;
}

/* Picks the exit program this kernel can run (see process.bpf.c). */
static int choose_exit_program(struct process_bpf *s, char *err, size_t errlen)
{
	int n = mr_kernel_tracepoint_args("sched_process_exit");
	int e;

	if (n < 0) {
		snprintf(err, errlen,
			 "cannot find the sched_process_exit tracepoint in the kernel's BTF "
			 "(/sys/kernel/btf/vmlinux): %s",
			 strerror(-n));
		return n;
	}
	e = bpf_program__set_autoload(s->progs.on_exit, n >= 2);
	e = e ?: bpf_program__set_autoload(s->progs.on_exit_leader, n < 2);
	return e ? bpf_failed("configure the process-exit program", e, err, errlen) : 0;
}

static int load_process(struct mr_data_plane *d, char *err, size_t errlen)
{
	struct process_bpf *s = process_bpf__open();
	int e;

	if (!s)
		return bpf_failed("open the process-event BPF object", -errno, err, errlen);
	d->process = s;
	s->rodata->wakeup_bytes = d->opts.ring_bytes / WAKEUP_FRACTION;
	e = choose_exit_program(s, err, errlen);
	if (e)
		return e;
	e = bpf_map__set_max_entries(s->maps.process_events, d->opts.ring_bytes);
	e = e ?: process_bpf__load(s);
	if (e)
		return bpf_failed("load the process-event BPF programs", e, err, errlen);
	d->ring_fds[MR_STREAM_PROCESS] = bpf_map__fd(s->maps.process_events);
	return 0;
}

static int load_bench(struct mr_data_plane *d, char *err, size_t errlen)
{
	struct bench_bpf *s = bench_bpf__open();
	int e;

	if (!s)
		return bpf_failed("open the benchmark BPF object", -errno, err, errlen);
	d->bench = s;
	s->rodata->wakeup_bytes = d->opts.ring_bytes / WAKEUP_FRACTION;
	s->rodata->bench_pid = (__u32)d->bench_pid;
	e = bpf_map__set_max_entries(s->maps.bench_events, d->opts.ring_bytes);
	e = e ?: bench_bpf__load(s);
	if (e)
		return bpf_failed("load the benchmark BPF program", e, err, errlen);
	d->ring_fds[MR_STREAM_BENCH] = bpf_map__fd(s->maps.bench_events);
	return 0;
}

static int fill_net_targets(struct mr_data_plane *d, char *err, size_t errlen)
{
	int fd = bpf_map__fd(d->net->maps.targets);
	__u8 one = 1;

	for (uint32_t i = 0; i < d->opts.net_npids; i++) {
		if (bpf_map_update_elem(fd, &d->net_pids[i], &one, BPF_ANY) != 0)
			return bpf_failed("fill the traced processes' map", -errno, err, errlen);
	}
	return 0;
}

static int size_net_maps(struct net_bpf *s, const struct mr_data_plane_opts *o)
{
	int cpus = libbpf_num_possible_cpus();
	int e = cpus < 0 ? cpus : bpf_map__set_max_entries(s->maps.net_data, o->net_ring_bytes);

	e = e ?: bpf_map__set_max_entries(s->maps.tcp_events, o->ring_bytes);
	e = e ?: bpf_map__set_max_entries(s->maps.conns, o->net_max_connections);
	e = e ?: bpf_map__set_max_entries(s->maps.scratch, (uint32_t)cpus);
	return e ?: bpf_map__set_max_entries(s->maps.verdicts, o->net_max_connections);
}

static int load_net(struct mr_data_plane *d, char *err, size_t errlen)
{
	struct net_bpf *s = net_bpf__open();
	int e;

	if (!s)
		return bpf_failed("open the network BPF object", -errno, err, errlen);
	d->net = s;
	s->rodata->wakeup_data_bytes = (__u64)d->opts.net_ring_bytes / NET_WAKEUP_FRACTION;
	s->rodata->wakeup_event_bytes = d->opts.ring_bytes / WAKEUP_FRACTION;
	s->rodata->payload_max = d->opts.net_payload_bytes;
	s->rodata->filter_pids = d->opts.net_npids > 0;
	s->rodata->exclude_tgid = d->opts.net_npids ? 0 : (__s32)getpid();
	e = size_net_maps(s, &d->opts);
	e = e ?: bpf_program__set_autoload(s->progs.on_fork, d->opts.net_npids > 0);
	e = e ?: net_bpf__load(s);
	if (e)
		return bpf_failed("load the network BPF programs", e, err, errlen);
	d->ring_fds[MR_STREAM_TCP] = bpf_map__fd(s->maps.tcp_events);
	d->ring_fds[MR_STREAM_NET] = bpf_map__fd(s->maps.net_data);
	e = mr_data_plane_conns_prepare(d);
	if (e) {
		snprintf(err, errlen, "cannot allocate the connection map's buffer: %s", strerror(-e));
		return e;
	}
	return fill_net_targets(d, err, errlen);
}

/* One manager for every stream that is on; each ring feeds its own queue. */
static int open_rings(struct mr_data_plane *d, char *err, size_t errlen)
{
	for (int i = 0; i < MR_STREAM_COUNT; i++) {
		ring_buffer_sample_fn take = i == MR_STREAM_NET ? take_net_record : take_record;
		void *queue = i == MR_STREAM_NET ? (void *)d : (void *)d->queues[i];
		int e = 0;

		if (d->ring_fds[i] < 0)
			continue;
		if (!d->rings) {
			d->rings = ring_buffer__new(d->ring_fds[i], take, queue, NULL);
			e = d->rings ? 0 : -errno;
		} else {
			e = ring_buffer__add(d->rings, d->ring_fds[i], take, queue);
		}
		if (e) {
			snprintf(err, errlen, "cannot open the data plane's ring buffers: %s", strerror(-e));
			return e;
		}
	}
	return 0;
}

int mr_data_plane_load(struct mr_data_plane *d, char *err, size_t errlen)
{
	int e = (d->opts.flags & MR_DATA_PLANE_NO_PROCESS) ? 0 : load_process(d, err, errlen);

	if (!e && d->bench_pid > 0)
		e = load_bench(d, err, errlen);
	if (!e && (d->opts.flags & MR_DATA_PLANE_NET))
		e = load_net(d, err, errlen);
	return e ? e : open_rings(d, err, errlen);
}

static int attach_one(struct bpf_program *prog, struct bpf_link **link, const char *where, char *err,
		      size_t errlen)
{
	char what[96];

	*link = bpf_program__attach(prog);
	if (*link)
		return 0;
	snprintf(what, sizeof(what), "attach to %s", where);
	return bpf_failed(what, -errno, err, errlen);
}

static int attach_net(struct mr_data_plane *d, char *err, size_t errlen)
{
	struct net_bpf *n = d->net;
	int e;

	if (!n)
		return 0;
	e = attach_one(n->progs.on_state, &n->links.on_state, "tp_btf/inet_sock_set_state", err, errlen);
	e = e
		    ?: attach_one(n->progs.on_retransmit, &n->links.on_retransmit,
				  "tp_btf/tcp_retransmit_skb", err, errlen);
	e = e ?: attach_one(n->progs.on_send, &n->links.on_send, "tp_btf/sock_send_length", err, errlen);
	e = e ?: attach_one(n->progs.on_recv, &n->links.on_recv, "tp_btf/sock_recv_length", err, errlen);
	if (!e && bpf_program__autoload(n->progs.on_fork))
		e = attach_one(n->progs.on_fork, &n->links.on_fork, "tp_btf/sched_process_fork", err, errlen);
	return e;
}

static int attach_process(struct process_bpf *p, char *err, size_t errlen)
{
	int leader, e;

	if (!p)
		return 0;
	leader = !bpf_program__autoload(p->progs.on_exit);
	e = attach_one(p->progs.on_exec, &p->links.on_exec, "tp_btf/sched_process_exec", err, errlen);
	e = e ?: attach_one(p->progs.on_fork, &p->links.on_fork, "tp_btf/sched_process_fork", err, errlen);
	return e
		       ?: attach_one(leader ? p->progs.on_exit_leader : p->progs.on_exit,
				     leader ? &p->links.on_exit_leader : &p->links.on_exit,
				     "tp_btf/sched_process_exit", err, errlen);
}

int mr_data_plane_attach(struct mr_data_plane *d, char *err, size_t errlen)
{
	int e;

	d->attached = 1;
	e = attach_process(d->process, err, errlen);
	if (!e && d->bench)
		e = attach_one(d->bench->progs.on_sys_enter, &d->bench->links.on_sys_enter,
			       "raw_tp/sys_enter", err, errlen);
	return e ? e : attach_net(d, err, errlen);
}

/* The sum over the per-CPU slots of the counter at offset in struct
 * mr_net_counters. */
static uint64_t net_counter(const struct mr_data_plane *d, size_t offset)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < MR_NET_COUNTER_SLOTS; i++) {
		const char *slot = (const char *)&d->net->bss->counters[i].c;

		sum += __atomic_load_n((const uint64_t *)(slot + offset), __ATOMIC_RELAXED);
	}
	return sum;
}

uint64_t mr_data_plane_kernel_drops(const struct mr_data_plane *d, uint32_t stream)
{
	if (stream == MR_STREAM_PROCESS && d->process)
		return __atomic_load_n(&d->process->bss->dropped, __ATOMIC_RELAXED);
	if (stream == MR_STREAM_BENCH && d->bench)
		return __atomic_load_n(&d->bench->bss->dropped, __ATOMIC_RELAXED);
	if (stream == MR_STREAM_TCP && d->net)
		return net_counter(d, offsetof(struct mr_net_counters, lost_events));
	if (stream == MR_STREAM_NET && d->net)
		return net_counter(d, offsetof(struct mr_net_counters, lost_data));
	return 0;
}

/* Connections cache their capture until this moves (net.bpf.c's
 * verdict_of); release: the map's change is seen first. */
static void verdicts_changed(struct mr_data_plane *d)
{
	__atomic_fetch_add(&d->net->data->verdict_generation, 1, __ATOMIC_RELEASE);
}

/* The connection's capture in the verdicts map (zero: none); 0 or a
 * negative errno. */
static int capture_of(int fd, uint64_t conn, struct mr_net_capture *c)
{
	memset(c, 0, sizeof(*c));
	if (bpf_map_lookup_elem(fd, &conn, c) == 0 || errno == ENOENT)
		return 0;
	return -errno;
}

/* Writes c, or deletes the entry when it asks for nothing but the default. */
static int put_capture(struct mr_data_plane *d, int fd, uint64_t conn, const struct mr_net_capture *c)
{
	int rc;

	if (c->verdict == MR_NET_CAPTURE && !c->skip_to[0] && !c->skip_to[1])
		rc = bpf_map_delete_elem(fd, &conn) == 0 || errno == ENOENT ? 0 : -errno;
	else
		rc = bpf_map_update_elem(fd, &conn, c, BPF_ANY) == 0 ? 0 : -errno;
	if (rc == 0)
		verdicts_changed(d);
	return rc;
}

int mr_data_plane_set_verdict(struct mr_data_plane *d, uint64_t conn, uint8_t verdict)
{
	int fd = d->net ? bpf_map__fd(d->net->maps.verdicts) : -1;
	struct mr_net_capture c;
	int rc;

	if (fd < 0)
		return -ENOTCONN;
	rc = capture_of(fd, conn, &c);
	if (rc)
		return rc;
	c.verdict = verdict;
	return put_capture(d, fd, conn, &c);
}

int mr_data_plane_set_skip(struct mr_data_plane *d, uint64_t conn, uint32_t direction, uint64_t skip_to)
{
	int fd = d->net ? bpf_map__fd(d->net->maps.verdicts) : -1;
	struct mr_net_capture c;
	int rc;

	if (fd < 0)
		return -ENOTCONN;
	if (direction > MR_NET_EGRESS)
		return -EINVAL;
	rc = capture_of(fd, conn, &c);
	if (rc || skip_to <= c.skip_to[direction])
		return rc;
	c.skip_to[direction] = skip_to;
	return put_capture(d, fd, conn, &c);
}

int mr_data_plane_set_target(struct mr_data_plane *d, int32_t pid, int add)
{
	int fd = d->net ? bpf_map__fd(d->net->maps.targets) : -1;
	__u8 one = 1;

	if (fd < 0)
		return -ENOTCONN;
	if (!d->opts.net_npids)
		return -EINVAL;
	if (add)
		return bpf_map_update_elem(fd, &pid, &one, BPF_ANY) == 0 ? 0 : -errno;
	return bpf_map_delete_elem(fd, &pid) == 0 || errno == ENOENT ? 0 : -errno;
}

void mr_data_plane_net_counters(const mr_data_plane *d, struct mr_net_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (!d || !d->net)
		return;
	for (size_t offset = 0; offset < sizeof(*out); offset += sizeof(uint64_t))
		*(uint64_t *)((char *)out + offset) = net_counter(d, offset);
}

/* Frees the rings before the maps they read; destroying a skeleton detaches
 * its programs (its links) first. */
void mr_data_plane_unload(struct mr_data_plane *d)
{
	ring_buffer__free(d->rings);
	d->rings = NULL;
	bench_bpf__destroy(d->bench);
	d->bench = NULL;
	net_bpf__destroy(d->net);
	d->net = NULL;
	free(d->conn_values);
	d->conn_values = NULL;
	process_bpf__destroy(d->process);
	d->process = NULL;
}
