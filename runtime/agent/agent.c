/* agent.c - `moonrover agent`: the main thread's event loop. It owns the Lua
 * states (through the host) and wakes for event batches (the data plane's
 * eventfd), script timers, signals (SIGHUP reloads, SIGTERM/SIGINT stop) and
 * HTTP (/metrics, /healthz). The data plane drains the kernel on its own
 * thread, so a slow script costs queue space, never kernel events. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "agent/agent_kube_stats.h"
#include "agent/agent_stats.h"
#include "agent/agent_status.h"
#include "api_test.h"
#include "script_host/script_set.h"
#include "base/log.h"
#include "files/pid_file.h"
#include "script_host/watchdog.h"

#define BATCHES_PER_WAKEUP 64
/* The longest the scripts' batches hold the loop before timers, signals and
 * HTTP get their turn (the network streams can keep it busy for good). */
#define DELIVER_SLICE_NS (10 * 1000 * 1000)
#define STATS_INTERVAL_S 1
/* Longest an event waits in the kernel when the ring is far from full: an
 * idle agent then wakes 10 times a second, not 100. */
#define DRAIN_MS 100
/* How long scripts with on_stop hooks get to finish (e.g. a last flush). */
#define STOP_GRACE_S 2

struct agent {
	const struct mr_agent_opts *opts;
	int32_t bench_pid; /* mr_agent_run_bench's process, or 0 */
	struct event_base *base;
	mr_metrics *metrics;
	mr_http *http;
	mr_data_plane *dp;
	struct mr_script_set *scripts;
	struct mr_agent_stats stats;
	struct mr_kube_series kube_stats;
	struct event *events[6];
	size_t nevents;
	uint32_t batch_max;
	int stopping;
	struct event *hup; /* caught from before the pid file exists */
	mr_pid_file *pid_file;
	uint64_t load_began_ns; /* when the last (re)load began reading the scripts */
};

/* The Kubernetes client of the agent that runs, for mr_agent_kube: the
 * scripts' states reach it with no handle of their own, and there is one
 * agent per process. Set and cleared by the main thread around the run. */
static struct mr_kube *agent_kube;

static const char *const STREAM_NAMES[MR_STREAM_COUNT] = { "process", "bench", "tcp", "net" };

/* One run of queued records of a stream to the scripts; how many records. */
static uint32_t deliver_run(struct agent *a, uint32_t stream, const unsigned char *base)
{
	uint32_t size = mr_data_plane_record_size(a->dp, stream), at, bytes = 0, n;

	if (size > 0)
		n = mr_data_plane_peek(a->dp, stream, a->batch_max, &at);
	else
		n = mr_data_plane_peek_bytes(a->dp, stream, a->batch_max, &at, &bytes);
	if (n == 0)
		return 0;
	mr_script_set_deliver(a->scripts, stream, base + (size_t)at * (size > 0 ? size : 1), n, size);
	if (size > 0)
		mr_data_plane_release(a->dp, stream, n);
	else
		mr_data_plane_release_bytes(a->dp, stream, n, bytes);
	return n;
}

/* Hands queued batches to the scripts, for at most DELIVER_SLICE_NS;
 * returns 1 when some may be left. */
static int deliver_some(struct agent *a)
{
	uint64_t end = mr_sys_monotonic_ns() + DELIVER_SLICE_NS;
	int batches = 0, more = 0;

	for (uint32_t stream = 0; stream < MR_STREAM_COUNT; stream++) {
		const unsigned char *base = mr_data_plane_storage(a->dp, stream);

		while (base) {
			uint64_t t0 = mr_sys_monotonic_ns();

			if (batches == BATCHES_PER_WAKEUP || t0 >= end) {
				more = 1;
				break;
			}
			if (deliver_run(a, stream, base) == 0)
				break;
			mr_agent_stats_batch(&a->stats, stream, mr_sys_monotonic_ns() - t0);
			batches++;
		}
	}
	return more;
}

static void on_events(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;
	uint64_t ignored;

	(void)what;
	if (fd >= 0 && read(fd, &ignored, sizeof(ignored)) < 0 && errno != EAGAIN)
		mr_log(MR_LEVEL_WARN, "agent", "reading the data plane's eventfd: %s", strerror(errno));
	/* More next turn of the loop, after the timers and HTTP: a timer of 0 s,
	 * since an event made active from its own level's callback would run
	 * again in the same turn, before anything else. */
	if (deliver_some(a)) {
		struct timeval now = { 0, 0 };

		if (event_add(a->events[1], &now) != 0)
			mr_log(MR_LEVEL_WARN, "agent",
			       "cannot schedule the next batches: they wait for the next wakeup");
	}
}

static void on_stats(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;

	(void)fd;
	(void)what;
	mr_agent_stats_sync(&a->stats, a->dp, a->scripts, a->http);
	mr_agent_kube_stats_sync(&a->kube_stats, a->metrics);
}

/* Tells `moonrover reload` how the last (re)load went (agent_status.h). */
static void write_status(struct agent *a)
{
	struct mr_agent_status st;
	char err[256];

	if (!a->pid_file)
		return;
	mr_agent_status_of(a->scripts, a->load_began_ns, &st);
	if (mr_agent_status_write(a->opts->pid_file, &st, err, sizeof(err)) != 0)
		mr_log(MR_LEVEL_WARN, "agent", "`moonrover reload` will get no answer: %s", err);
}

/* Removes the status file: once the pid file is held, so that a file left
 * by an earlier agent (the same pid after a container restart) is never
 * taken for this one's answer, and at the stop, so that none is left. */
static void remove_status(struct agent *a)
{
	char err[256];

	if (a->pid_file && mr_agent_status_remove(a->opts->pid_file, err, sizeof(err)) != 0)
		mr_log(MR_LEVEL_WARN, "agent", "`moonrover reload` may take an earlier agent's answer: %s",
		       err);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct agent *a = arg;

	(void)what;
	if (sig == SIGHUP) {
		mr_log(MR_LEVEL_INFO, "agent", "SIGHUP: reloading the scripts");
		a->load_began_ns = mr_sys_monotonic_ns();
		mr_script_set_reload(a->scripts);
		write_status(a);
		mr_agent_stats_sync(&a->stats, a->dp, a->scripts, a->http);
		return;
	}
	mr_log(MR_LEVEL_INFO, "agent", "%s: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	if (!a->stopping) {
		struct timeval grace = { .tv_sec = STOP_GRACE_S };

		a->stopping = 1;
		if (mr_script_set_stop(a->scripts) && event_base_loopexit(a->base, &grace) == 0) {
			mr_log(MR_LEVEL_INFO, "agent",
			       "letting the scripts finish (up to %d s; signal again to stop now)",
			       STOP_GRACE_S);
			return;
		}
	}
	event_base_loopbreak(a->base);
}

static int add_event(struct agent *a, evutil_socket_t fd, short what, event_callback_fn cb,
		     const struct timeval *tv)
{
	struct event *ev = event_new(a->base, fd, what, cb, a);

	if (!ev)
		return -ENOMEM;
	a->events[a->nevents++] = ev;
	return event_add(ev, tv) == 0 ? 0 : -EINVAL;
}

static int add_events(struct agent *a)
{
	struct timeval stats = { .tv_sec = STATS_INTERVAL_S };
	int rc = add_event(a, mr_data_plane_notify_fd(a->dp), EV_READ | EV_PERSIST, on_events, NULL);

	rc = rc ?: add_event(a, -1, 0, on_events, NULL);
	rc = rc ?: add_event(a, -1, EV_PERSIST, on_stats, &stats);
	rc = rc ?: add_event(a, SIGTERM, EV_SIGNAL | EV_PERSIST, on_signal, NULL);
	rc = rc ?: add_event(a, SIGINT, EV_SIGNAL | EV_PERSIST, on_signal, NULL);
	/* Delivering batches is bulk work: it runs when no timer, signal or HTTP
	 * connection is waiting (libevent serves the lowest level last). */
	for (int i = 0; rc == 0 && i < 2; i++)
		rc = event_priority_set(a->events[i], MR_HTTP_PRIORITIES - 1) == 0 ? 0 : -EINVAL;
	return rc;
}

/* `moonrover reload` may send SIGHUP as soon as the pid file exists: it is
 * caught from before then, and handled once the loop runs. */
static int take_pid_file(struct agent *a, char *err, size_t errlen)
{
	const char *path = a->opts->pid_file;

	a->hup = event_new(a->base, SIGHUP, EV_SIGNAL | EV_PERSIST, on_signal, a);
	if (!a->hup || event_add(a->hup, NULL) != 0) {
		snprintf(err, errlen, "cannot set up the event loop");
		return -ENOMEM;
	}
	if (!path || !*path)
		return 0;
	a->pid_file = mr_pid_file_acquire(path, err, errlen);
	if (!a->pid_file)
		return -errno;
	remove_status(a);
	return 0;
}

/* The data plane, with the network tracer when asked and the kernel can:
 * without it the agent still runs, and says why in one line. */
static mr_data_plane *open_plane(const struct mr_data_plane_opts *dpo, int32_t bench_pid, char *err,
				 size_t errlen)
{
	return bench_pid > 0 ? mr_data_plane_open_bench(dpo, bench_pid, err, errlen)
			     : mr_data_plane_open(dpo, err, errlen);
}

static mr_data_plane *open_data_plane(const struct agent *a, char *err, size_t errlen)
{
	const struct mr_agent_opts *o = a->opts;
	struct mr_data_plane_opts dpo = { .queue_capacity = o->queue_capacity,
					  .drain_ms = DRAIN_MS,
					  .net_payload_bytes = o->net_payload_bytes,
					  .net_max_connections = o->net_max_connections,
					  .net_ring_bytes = o->net_ring_bytes };
	mr_data_plane *dp;

	if (o->network) {
		dpo.flags |= MR_DATA_PLANE_NET;
		dp = open_plane(&dpo, a->bench_pid, err, errlen);
		if (dp)
			return dp;
		mr_log(MR_LEVEL_WARN, "agent", "running without the network tracer: %s", err);
		dpo.flags &= ~(uint32_t)MR_DATA_PLANE_NET;
	}
	return open_plane(&dpo, a->bench_pid, err, errlen);
}

static int open_parts(struct agent *a, char *err, size_t errlen)
{
	const struct mr_agent_opts *o = a->opts;
	struct mr_http_opts http = { .max_connections = o->http_max_connections,
				     .timeout_ms = o->http_timeout_ms };
	int rc;

	a->base = event_base_new();
	/* Levels the HTTP endpoint uses to serve connections before accepting. */
	if (!a->base || event_base_priority_init(a->base, MR_HTTP_PRIORITIES) != 0) {
		snprintf(err, errlen, "cannot create the event loop: out of memory");
		return -ENOMEM;
	}
	rc = take_pid_file(a, err, errlen);
	if (rc != 0)
		return rc;
	a->metrics = mr_metrics_new(err, errlen);
	if (!a->metrics)
		return -ENOMEM;
	if (o->http_address && *o->http_address &&
	    !(a->http = mr_http_open(a->base, o->http_address, a->metrics, &http, err, errlen)))
		return -errno;
	a->dp = open_data_plane(a, err, errlen);
	if (!a->dp)
		return -errno;
	a->scripts = mr_script_set_new(a->base, a->metrics, a->dp, o);
	if (!a->scripts)
		return mr_error(err, errlen, -ENOMEM, "out of memory");
	rc = mr_agent_stats_init(&a->stats, a->metrics, a->dp, STREAM_NAMES);
	rc = rc ?: mr_agent_kube_stats_init(&a->kube_stats, a->metrics, o->kube);
	return rc ? mr_error(err, errlen, rc, "cannot make the agent's metrics: %s", strerror(-rc)) : 0;
}

static void close_parts(struct agent *a)
{
	for (size_t i = 0; i < a->nevents; i++)
		event_free(a->events[i]);
	mr_data_plane_close(a->dp);
	mr_script_set_free(a->scripts);
	mr_agent_stats_free(&a->stats);
	mr_http_close(a->http);
	mr_metrics_free(a->metrics);
	if (a->hup)
		event_free(a->hup);
	if (a->base)
		event_base_free(a->base);
	remove_status(a);
	mr_pid_file_release(a->pid_file);
}

static int run(struct agent *a, char *err, size_t errlen)
{
	int rc = open_parts(a, err, errlen);

	if (rc != 0)
		return rc;
	a->load_began_ns = mr_sys_monotonic_ns();
	rc = mr_script_set_start(a->scripts, err, errlen);
	if (rc != 0)
		return rc;
	write_status(a);
	rc = mr_data_plane_start(a->dp, err, errlen);
	if (rc != 0)
		return rc;
	rc = add_events(a);
	if (rc != 0)
		return mr_error(err, errlen, rc, "cannot set up the event loop: %s", strerror(-rc));
	mr_agent_stats_sync(&a->stats, a->dp, a->scripts, a->http);
	if (a->http)
		mr_log(MR_LEVEL_INFO, "agent", "running (pid %d), /metrics and /healthz on port %u",
		       (int)getpid(), (unsigned)mr_http_port(a->http));
	else
		mr_log(MR_LEVEL_INFO, "agent", "running (pid %d), no HTTP endpoint", (int)getpid());
	if (event_base_dispatch(a->base) < 0) {
		snprintf(err, errlen, "the event loop failed");
		return -EIO;
	}
	deliver_some(a);
	return 0;
}

static int run_agent(const struct mr_agent_opts *o, int32_t bench_pid, char *err, size_t errlen)
{
	struct agent a = { .opts = o,
			   .bench_pid = bench_pid,
			   .batch_max = o->batch_max ? o->batch_max : 4096 };
	int rc;

	mr_log_set_level(o->log_level);
	rc = mr_script_watchdog_init();
	if (rc != 0) {
		snprintf(err, errlen, "cannot set up the Lua watchdog timer: %s", strerror(-rc));
		return rc;
	}
	agent_kube = o->kube;
	rc = run(&a, err, errlen);
	close_parts(&a);
	agent_kube = NULL;
	mr_script_watchdog_shutdown();
	if (rc == 0)
		mr_log(MR_LEVEL_INFO, "agent", "stopped");
	return rc;
}

struct mr_kube *mr_agent_kube(void)
{
	return agent_kube;
}

int mr_agent_run(const struct mr_agent_opts *o, char *err, size_t errlen)
{
	return run_agent(o, 0, err, errlen);
}

int mr_agent_run_bench(const struct mr_agent_opts *o, int32_t bench_pid, char *err, size_t errlen)
{
	return run_agent(o, bench_pid, err, errlen);
}
