/* data_plane_streams.c - the consumer's side of the data plane: a stream's
 * fixed record storage, peek/release of contiguous runs, statistics, and
 * the benchmark's C-only drain. Called from the agent's main thread only. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "dataplane/data_plane_internal.h"
#include "base/byte_queue.h"
#include "base/spsc_queue.h"
#include "base/pid_table.h"

static struct mr_spsc_queue *queue_of(const struct mr_data_plane *d, uint32_t stream)
{
	return d && stream < MR_STREAM_COUNT ? d->queues[stream] : NULL;
}

static struct mr_byte_queue *bytes_of(const struct mr_data_plane *d, uint32_t stream)
{
	return d && stream == MR_STREAM_NET ? d->net_queue : NULL;
}

void *mr_data_plane_storage(const mr_data_plane *d, uint32_t stream)
{
	struct mr_spsc_queue *q = queue_of(d, stream);
	struct mr_byte_queue *b = bytes_of(d, stream);

	if (b)
		return mr_byte_queue_storage(b);
	return q ? mr_spsc_queue_records(q) : NULL;
}

uint32_t mr_data_plane_record_size(const mr_data_plane *d, uint32_t stream)
{
	struct mr_spsc_queue *q = queue_of(d, stream);

	return q ? mr_spsc_queue_record_size(q) : 0;
}

uint32_t mr_data_plane_peek(mr_data_plane *d, uint32_t stream, uint32_t max, uint32_t *index)
{
	struct mr_spsc_queue *q = queue_of(d, stream);

	*index = 0;
	return q ? mr_spsc_queue_peek(q, max, index) : 0;
}

void mr_data_plane_release(mr_data_plane *d, uint32_t stream, uint32_t n)
{
	struct mr_spsc_queue *q = queue_of(d, stream);

	if (q)
		mr_spsc_queue_release(q, n);
}

uint32_t mr_data_plane_peek_bytes(mr_data_plane *d, uint32_t stream, uint32_t max, uint32_t *offset,
				  uint32_t *bytes)
{
	struct mr_byte_queue *b = bytes_of(d, stream);

	*offset = *bytes = 0;
	return b ? mr_byte_queue_peek(b, max, offset, bytes) : 0;
}

void mr_data_plane_release_bytes(mr_data_plane *d, uint32_t stream, uint32_t n, uint32_t bytes)
{
	struct mr_byte_queue *b = bytes_of(d, stream);

	if (b)
		mr_byte_queue_release(b, n, bytes);
}

int mr_data_plane_net_verdict(mr_data_plane *d, uint64_t conn, uint32_t verdict, char *err, size_t errlen)
{
	int e;

	if (verdict != MR_NET_CAPTURE && verdict != MR_NET_COUNT) {
		snprintf(err, errlen, "unknown verdict %u for connection %llu", verdict,
			 (unsigned long long)conn);
		return -EINVAL;
	}
	e = d ? mr_data_plane_set_verdict(d, conn, (uint8_t)verdict) : -ENOTCONN;
	if (e)
		snprintf(err, errlen, "cannot set the verdict of connection %llu: %s",
			 (unsigned long long)conn,
			 e == -ENOTCONN ? "the network tracer is off" : strerror(-e));
	return e;
}

int mr_data_plane_net_capture(mr_data_plane *d, uint64_t conn, uint32_t direction, uint64_t skip_to,
			      char *err, size_t errlen)
{
	int e = d ? mr_data_plane_set_skip(d, conn, direction, skip_to) : -ENOTCONN;

	if (e)
		snprintf(err, errlen, "cannot set the capture of connection %llu: %s",
			 (unsigned long long)conn,
			 e == -ENOTCONN ? "the network tracer is off"
					: (e == -EINVAL ? "unknown direction" : strerror(-e)));
	return e;
}

static const char *target_problem(int e)
{
	if (e == -ENOTCONN)
		return "the network tracer is off";
	if (e == -EINVAL)
		return "it traces every process";
	if (e == -E2BIG)
		return "the map of traced processes is full";
	return strerror(-e);
}

int mr_data_plane_net_target(mr_data_plane *d, int32_t pid, int32_t add, char *err, size_t errlen)
{
	int e = d ? mr_data_plane_set_target(d, pid, add) : -ENOTCONN;

	if (e)
		snprintf(err, errlen, "cannot %s process %d %s the traced ones: %s", add ? "add" : "remove",
			 pid, add ? "to" : "from", target_problem(e));
	return e;
}

static size_t pid_offset(uint32_t stream)
{
	return stream == MR_STREAM_BENCH ? offsetof(struct mr_bench_event, pid)
					 : offsetof(struct mr_process_event, pid);
}

uint64_t mr_data_plane_drain_in_c(mr_data_plane *d, uint32_t stream)
{
	struct mr_spsc_queue *q = queue_of(d, stream);
	const unsigned char *base;
	uint32_t size, index, n;
	int32_t pid;
	uint64_t *count;
	int added;
	size_t at;
	uint64_t total = 0;

	if (!q)
		return 0;
	base = mr_spsc_queue_records(q);
	size = mr_spsc_queue_record_size(q);
	at = pid_offset(stream);
	while ((n = mr_spsc_queue_peek(q, UINT32_MAX, &index)) > 0) {
		for (uint32_t i = index; i < index + n; i++) {
			memcpy(&pid, base + (size_t)i * size + at, sizeof(pid));
			count = mr_pid_table_put(d->tally, pid, &added);
			if (count)
				(*count)++;
		}
		mr_spsc_queue_release(q, n);
		total += n;
	}
	return total;
}

void mr_data_plane_stream_stats(const mr_data_plane *d, uint32_t stream,
				struct mr_data_plane_stream_stats *out)
{
	struct mr_spsc_queue *q = queue_of(d, stream);
	struct mr_byte_queue *b = bytes_of(d, stream);
	struct mr_spsc_queue_counts c;
	struct mr_byte_queue_counts bc;

	memset(out, 0, sizeof(*out));
	if (b) {
		mr_byte_queue_counts(b, &bc);
		c = (struct mr_spsc_queue_counts){ bc.received, bc.released, bc.dropped, bc.queued };
	} else if (q) {
		mr_spsc_queue_counts(q, &c);
	} else {
		return;
	}
	out->received = c.received;
	out->delivered = c.released;
	out->dropped_queue = c.dropped;
	out->queued = c.queued;
	out->dropped_kernel = mr_data_plane_kernel_drops(d, stream);
}
