/* data_plane_conns.c - the kernel's map of the connections it follows, read
 * from user space: how many entries it holds (a walk of its keys, at most
 * once a second: a full map is 65536 entries) and whether one connection is
 * still in it. Called from the consumer's thread only. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dataplane/data_plane_internal.h"
#include "net.skel.h"

#define WALK_BATCH 256u
#define COUNT_PERIOD_NS 1000000000ull

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int mr_data_plane_conns_prepare(struct mr_data_plane *d)
{
	d->conn_values = malloc(WALK_BATCH * (size_t)bpf_map__value_size(d->net->maps.conns));
	return d->conn_values ? 0 : -ENOMEM;
}

/* Walks the map in batches; the entries, or a negative errno. */
static int64_t walk(struct mr_data_plane *d)
{
	int fd = bpf_map__fd(d->net->maps.conns);
	uint64_t keys[WALK_BATCH], token = 0;
	int64_t total = 0;
	void *in = NULL;

	for (;;) {
		uint32_t count = WALK_BATCH;
		int rc = bpf_map_lookup_batch(fd, in, &token, keys, d->conn_values, &count, NULL);

		if (rc && rc != -ENOENT)
			return rc;
		total += count;
		if (rc == -ENOENT)
			return total;
		in = &token;
	}
}

uint64_t mr_data_plane_net_conn_count(mr_data_plane *d)
{
	uint64_t now;
	int64_t n;

	if (!d || !d->net)
		return 0;
	now = now_ns();
	if (d->conn_count_ns && now - d->conn_count_ns < COUNT_PERIOD_NS)
		return d->conn_count;
	n = walk(d);
	if (n >= 0) /* on an error (none expected), the last count stands */
		d->conn_count = (uint64_t)n;
	d->conn_count_ns = now;
	return d->conn_count;
}

int mr_data_plane_net_conn_open(mr_data_plane *d, uint64_t conn)
{
	if (!d || !d->net)
		return -ENOTCONN;
	if (bpf_map_lookup_elem(bpf_map__fd(d->net->maps.conns), &conn, d->conn_values) == 0)
		return 1;
	return errno == ENOENT ? 0 : -errno;
}
