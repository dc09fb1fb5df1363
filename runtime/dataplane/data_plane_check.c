/* data_plane_check.c - `moonrover check`'s network probe: the network
 * tracer's programs loaded and attached for this process only, then a real
 * loopback TCP connection carrying "ping" one way and "pong" back; the probe
 * passes when the connection events and the two payloads reach the queues. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api_test.h"
#include "dataplane/data_plane_check.h"

#define WAIT_MS 1000

struct loopback {
	int listener, client, server;
};

static void close_all(struct loopback *l)
{
	int *fds[] = { &l->listener, &l->client, &l->server };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

/* Connects a client to a listener on 127.0.0.1; 0 or -errno. */
static int connect_loopback(struct loopback *l)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);

	l->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	l->client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->listener < 0 || l->client < 0 || bind(l->listener, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(l->listener, 1) != 0 || getsockname(l->listener, (struct sockaddr *)&a, &alen) != 0 ||
	    connect(l->client, (struct sockaddr *)&a, sizeof(a)) != 0)
		return -errno;
	l->server = accept(l->listener, NULL, NULL);
	return l->server < 0 ? -errno : 0;
}

/* "ping" from the client, "pong" back; 0 or -errno. */
static int ping_pong(struct loopback *l)
{
	char buf[8];

	if (write(l->client, "ping", 4) != 4 || read(l->server, buf, sizeof(buf)) != 4 ||
	    write(l->server, "pong", 4) != 4 || read(l->client, buf, sizeof(buf)) != 4)
		return errno ? -errno : -EIO;
	return 0;
}

/* Waits for the records of the exchange: how many data records came. */
static uint32_t data_records(mr_data_plane *d, uint32_t *events)
{
	uint64_t end = mr_sys_monotonic_ns() + (uint64_t)WAIT_MS * 1000000u;
	uint32_t records = 0, offset, bytes, index, n;

	*events = 0;
	while (records < 4 && mr_sys_monotonic_ns() < end) {
		mr_data_plane_wait(d, 50);
		while ((n = mr_data_plane_peek_bytes(d, MR_STREAM_NET, 64, &offset, &bytes)) > 0) {
			records += n;
			mr_data_plane_release_bytes(d, MR_STREAM_NET, n, bytes);
		}
		while ((n = mr_data_plane_peek(d, MR_STREAM_TCP, 64, &index)) > 0) {
			*events += n;
			mr_data_plane_release(d, MR_STREAM_TCP, n);
		}
	}
	return records;
}

static int run_probe(mr_data_plane *d, char *detail, size_t len)
{
	struct loopback l = { -1, -1, -1 };
	uint32_t records, events;
	int rc = connect_loopback(&l);

	if (rc == 0)
		rc = ping_pong(&l);
	close_all(&l);
	if (rc != 0) {
		snprintf(detail, len, "the loopback connection failed: %s", strerror(-rc));
		return 0;
	}
	records = data_records(d, &events);
	if (records < 4 || events == 0) {
		snprintf(detail, len, "%u of 4 socket reads and writes and %u connection events arrived",
			 records, events);
		return 0;
	}
	snprintf(detail, len, "connections and the bytes of their reads and writes reach the agent");
	return 1;
}

int mr_data_plane_check_network(char *detail, size_t len)
{
	int32_t self = (int32_t)getpid();
	struct mr_data_plane_opts o = { .flags = MR_DATA_PLANE_NET,
					.net_pids = &self,
					.net_npids = 1,
					.ring_bytes = 1u << 20,
					.net_queue_bytes = 1u << 20 };
	char err[256];
	mr_data_plane *d = mr_data_plane_open(&o, err, sizeof(err));
	int rc;

	if (!d || mr_data_plane_start(d, err, sizeof(err)) != 0) {
		rc = errno == EPERM || errno == EACCES ? -EPERM : 0;
		snprintf(detail, len, "%s", err);
		mr_data_plane_close(d);
		return rc;
	}
	rc = run_probe(d, detail, len);
	mr_data_plane_close(d);
	return rc;
}
