/* data_plane_thread.c - the thread that moves events from the kernel's ring
 * buffers into the stream queues. It waits in epoll on the rings (edge
 * triggered: it wakes when a BPF program forces a wakeup at the ring's
 * watermark, not again and again while data keeps coming) and on a stop
 * eventfd, or at most drain_ms; then it drains every ring and, when a queue
 * got events, makes the notify eventfd readable: once per drain, not per
 * event. Once traffic has quieted, it gives the net queue's memory back
 * (mr_byte_queue_trim). It blocks every signal, so signals stay with the
 * main thread. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "base/thread.h"
#include "dataplane/data_plane_internal.h"
#include "base/byte_queue.h"
#include "base/spsc_queue.h"

#define THREAD_NAME "mr-data-plane"
/* The net queue is looked at once a second; when at most QUIET_BYTES went
 * through it in that second, its free space is given back but for
 * QUIET_BYTES after its newest record. Under load it keeps what it grew to:
 * a trim per second of a busy queue would fault its pages in again. */
#define CHECK_PERIOD_NS 1000000000ull
#define QUIET_BYTES (256u << 10)

static int watch(int epoll_fd, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

int mr_data_plane_thread_prepare(struct mr_data_plane *d, char *err, size_t errlen)
{
	int e = 0;

	d->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	d->epoll_fd = d->stop_fd < 0 ? -1 : epoll_create1(EPOLL_CLOEXEC);
	if (d->epoll_fd < 0)
		e = -errno;
	if (!e)
		e = watch(d->epoll_fd, d->stop_fd, EPOLLIN);
	for (int i = 0; !e && i < MR_STREAM_COUNT; i++)
		if (d->ring_fds[i] >= 0)
			e = watch(d->epoll_fd, d->ring_fds[i], EPOLLIN | EPOLLET);
	if (e)
		snprintf(err, errlen, "cannot set up the data plane's epoll: %s", strerror(-e));
	return e;
}

static uint64_t pushed(const struct mr_data_plane *d)
{
	uint64_t n = 0;

	for (int i = 0; i < MR_STREAM_COUNT; i++)
		if (d->queues[i])
			n += mr_spsc_queue_pushed(d->queues[i]);
	return d->net_queue ? n + mr_byte_queue_pushed(d->net_queue) : n;
}

static void notify(const struct mr_data_plane *d)
{
	uint64_t one = 1;
	ssize_t n = write(d->notify_fd, &one, sizeof(one));

	/* It can only fail with EAGAIN, when the eventfd's counter is full:
	 * then it is readable already. */
	(void)n;
}

/* Empties every ring, in rounds of at most MR_DATA_PLANE_NET_ROUND net
 * records: each round also takes the other rings' events and tells the
 * consumer. The net ring is the last, so stopping it ends the round. */
static void drain(struct mr_data_plane *d)
{
	int rc;

	do {
		uint64_t before = pushed(d);

		d->net_budget = MR_DATA_PLANE_NET_ROUND;
		rc = ring_buffer__consume(d->rings);
		if (pushed(d) != before)
			notify(d);
	} while (rc == -EAGAIN && !atomic_load_explicit(&d->stop, memory_order_acquire));
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Trims the net queue after a quiet second that followed records. */
static void shrink_when_quiet(struct mr_data_plane *d)
{
	uint64_t now = now_ns(), head;

	if (!d->net_queue || now - d->net_check_ns < CHECK_PERIOD_NS)
		return;
	head = mr_byte_queue_pushed_bytes(d->net_queue);
	if (head - d->net_check_head <= QUIET_BYTES && head != d->net_trim_head) {
		mr_byte_queue_trim(d->net_queue, QUIET_BYTES);
		d->net_trim_head = head;
	}
	d->net_check_ns = now;
	d->net_check_head = head;
}

static void *run(void *arg)
{
	struct mr_data_plane *d = arg;
	struct epoll_event ev[MR_STREAM_COUNT + 1];

	while (!atomic_load_explicit(&d->stop, memory_order_acquire)) {
		if (epoll_wait(d->epoll_fd, ev, MR_STREAM_COUNT + 1, (int)d->opts.drain_ms) < 0 &&
		    errno != EINTR)
			break;
		drain(d);
		shrink_when_quiet(d);
	}
	return NULL;
}

int mr_data_plane_thread_start(struct mr_data_plane *d, char *err, size_t errlen)
{
	int e = mr_thread_start(&d->thread, &d->thread_running, THREAD_NAME, run, d);

	if (e)
		snprintf(err, errlen, "cannot start the data plane's thread: %s", strerror(-e));
	return e;
}

void mr_data_plane_thread_stop(struct mr_data_plane *d)
{
	uint64_t one = 1;
	ssize_t n;

	if (!d->thread_running)
		return;
	atomic_store_explicit(&d->stop, 1, memory_order_release);
	n = write(d->stop_fd, &one, sizeof(one));
	/* Should the wakeup fail, the thread still sees the flag within drain_ms. */
	(void)n;
	pthread_join(d->thread, NULL);
	d->thread_running = 0;
}
