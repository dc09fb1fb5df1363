/* api.h - the whole FFI surface of the moonrover runtime.
 *
 * Lua sees exactly what is declared here: the build preprocesses this file with
 * MR_FFI_CDEF defined (no system includes, no macros) into the text that
 * lua/moonrover/rt.lua hands to ffi.cdef. Keep it plain C declarations only.
 * Strings returned as const char * stay owned by the object that returned them.
 */
#ifndef MR_API_H
#define MR_API_H

#ifndef MR_FFI_CDEF
#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>
/* The library exports exactly what this header declares. */
#pragma GCC visibility push(default)
#else
typedef uint32_t __u32;
typedef int32_t __s32;
typedef uint64_t __u64;
#endif

/* Event records shared with the BPF programs. */
#include "events.h"

/* ---------------------------------------------------------------- versions */

const char *mr_version(void);
const char *mr_build_info(void);

/* ------------------------------------------------------------ profile data */

/* A profile: symbolized stacks with counts, frames and modules interned. The
 * arrays returned below stay valid until the profile is next modified. */
typedef struct mr_profile mr_profile;

enum mr_frame_kind {
	MR_FRAME_USER = 0,    /* code in an executable or shared library */
	MR_FRAME_KERNEL = 1,  /* kernel text */
	MR_FRAME_JIT = 2,     /* named by a /tmp/perf-PID.map file */
	MR_FRAME_UNKNOWN = 3  /* no mapping covers the address */
};

struct mr_frame {
	uint32_t name;     /* string id: function, or "module+0xoffset" */
	uint32_t module;   /* module id; 0 means none */
	uint64_t address;  /* offset in the module file, or the kernel address */
	uint32_t kind;     /* enum mr_frame_kind */
	uint32_t resolved; /* 1 when name is a real symbol */
};

struct mr_module {
	uint32_t path;     /* string id of the file path */
	uint32_t build_id; /* string id of the hex build-id ("" when none) */
};

struct mr_sample {
	uint32_t pid;
	uint32_t comm;     /* string id of the process name */
	uint32_t first;    /* index of the leaf frame in mr_profile_stack_frames() */
	uint32_t depth;    /* number of frames, leaf first */
	uint64_t count;    /* samples (on-CPU) or context switches (off-CPU) */
	uint64_t nanos;    /* on-CPU time, or blocked time */
};

mr_profile *mr_profile_new(void);
void mr_profile_free(mr_profile *p);
/* The _add functions intern their argument (NULL counts as "") and return its
 * id, or 0xffffffff on bad arguments or when out of memory. */
uint32_t mr_profile_string_add(mr_profile *p, const char *s);
const char *mr_profile_string(const mr_profile *p, uint32_t id);
uint32_t mr_profile_module_add(mr_profile *p, const char *path, const char *build_id);
uint32_t mr_profile_frame_add(mr_profile *p, const struct mr_frame *f);
/* Adds count/nanos to the sample with this pid, comm and stack (frame ids,
 * leaf first), creating it when new. Returns 0, or a negative errno. */
int mr_profile_sample_add(mr_profile *p, uint32_t pid, const char *comm, const uint32_t *frames,
			  uint32_t depth, uint64_t count, uint64_t nanos);
uint32_t mr_profile_sample_count(const mr_profile *p);
const struct mr_sample *mr_profile_samples(const mr_profile *p);
const uint32_t *mr_profile_stack_frames(const mr_profile *p);
uint32_t mr_profile_frame_count(const mr_profile *p);
const struct mr_frame *mr_profile_frames(const mr_profile *p);
uint32_t mr_profile_module_count(const mr_profile *p);
const struct mr_module *mr_profile_modules(const mr_profile *p);

/* Writes the profile as gzipped pprof (profile.proto), replacing path
 * atomically. off_cpu selects the sample types; period_ns is the sampling
 * period of on-CPU profiles (off-CPU ones get 1). Samples carry pid and comm
 * labels and a root frame named after the process. Returns 0, or a negative
 * errno with "cannot write PATH: reason" in err. */
int mr_pprof_write(const mr_profile *p, const char *path, int off_cpu, uint64_t period_ns,
		   uint64_t duration_ns, char *err, size_t errlen);

/* -------------------------------------------------------------- symbolizer */

typedef struct mr_symbolizer mr_symbolizer;

struct mr_symbol {
	const char *name;     /* demangled function name, NULL when unresolved */
	const char *module;   /* path of the file, or "[kernel.kallsyms]", NULL when unknown */
	const char *build_id; /* hex build-id or "" */
	uint64_t offset;      /* file offset within module (user) or the address (kernel) */
	uint32_t kind;        /* enum mr_frame_kind */
};

struct mr_symbolizer_stats {
	uint64_t files_parsed;     /* ELF files whose symbols were loaded */
	uint64_t file_cache_hits;  /* lookups answered by an already parsed file */
	uint64_t processes;        /* processes whose mappings are known */
	uint64_t maps_reads;       /* reads of /proc/PID/maps */
	uint64_t unresolved;       /* addresses left without a symbol */
};

mr_symbolizer *mr_symbolizer_new(int kernel);
void mr_symbolizer_free(mr_symbolizer *s);
/* Reads the mappings of pid now (and opens what they name) so that its
 * addresses resolve after it exits. Returns 0 or a negative errno. */
int mr_symbolizer_track(mr_symbolizer *s, int pid);
void mr_symbolizer_forget(mr_symbolizer *s, int pid);
/* Resolves one address; out's strings live as long as the symbolizer. */
int mr_symbolizer_resolve(mr_symbolizer *s, int pid, uint64_t addr, struct mr_symbol *out);
int mr_symbolizer_resolve_kernel(mr_symbolizer *s, uint64_t addr, struct mr_symbol *out);
/* Resolves a file offset of an ELF file directly (for tests and tools). */
int mr_symbolizer_resolve_file(mr_symbolizer *s, const char *path, uint64_t file_offset,
			       struct mr_symbol *out);
void mr_symbolizer_stats(const mr_symbolizer *s, struct mr_symbolizer_stats *out);

/* ---------------------------------------------------------------- profiler */

typedef struct mr_profiler mr_profiler;

struct mr_profiler_opts {
	uint32_t frequency;      /* on-CPU sampling frequency, Hz */
	int32_t off_cpu;         /* 1: blocked time from sched_switch instead */
	int32_t kernel;          /* 1: keep kernel frames */
	const int32_t *pids;     /* processes to profile; NULL: every process */
	uint32_t npids;
	uint32_t max_stacks;     /* stack map entries; 0: default */
};

struct mr_profiler_stats {
	uint64_t samples;         /* samples (or switches) aggregated in the kernel */
	uint64_t idle_samples;    /* on-CPU samples of idle CPUs, not profiled */
	uint64_t lost_user_stack; /* user stack could not be read */
	uint64_t lost_stack_full; /* stack storage full (or out of memory) */
	uint64_t lost_counts_full;/* count map full */
	uint64_t lost_notify;     /* new-process notices dropped (ring full) */
	uint64_t lost_offcpu_start;/* blocked-since map full */
	uint64_t processes;       /* distinct processes seen */
	uint64_t stacks;          /* distinct (pid, stack) keys drained */
	uint64_t first_sample_ns; /* CLOCK_MONOTONIC time of the first sample, 0 if none */
	uint64_t start_ns;        /* CLOCK_MONOTONIC time the profiler was attached */
};

mr_profiler *mr_profiler_open(const struct mr_profiler_opts *o, char *err, size_t errlen);
int mr_profiler_start(mr_profiler *p, char *err, size_t errlen);
/* Waits up to timeout_ms for kernel notices and handles them (new processes
 * get their mappings captured). Returns the number handled or a negative errno. */
int mr_profiler_poll(mr_profiler *p, int timeout_ms);
/* Moves everything counted so far into prof, symbolized. Nothing is lost
 * between drains: the kernel counts into a second map while one is read. */
int mr_profiler_drain(mr_profiler *p, mr_profile *prof);
void mr_profiler_stop(mr_profiler *p);
void mr_profiler_stats(const mr_profiler *p, struct mr_profiler_stats *out);
void mr_profiler_close(mr_profiler *p);

/* ----------------------------------------------------------- event streams */

/* The data plane: BPF programs feeding ring buffers, a thread draining them
 * into one bounded queue per stream, and an eventfd that becomes readable
 * when a queue has events. It keeps draining while the consumer (Lua) is
 * slow or stuck; what does not fit in a queue is dropped and counted. */
typedef struct mr_data_plane mr_data_plane;

enum mr_stream {
	MR_STREAM_PROCESS = 0, /* struct mr_process_event (bpf/events.h) */
	MR_STREAM_BENCH = 1,   /* struct mr_bench_event, only with MR_DATA_PLANE_BENCH */
	MR_STREAM_COUNT = 2
};

enum mr_data_plane_flags {
	MR_DATA_PLANE_BENCH = 1 /* also attach the benchmark event source */
};

struct mr_data_plane_opts {
	uint32_t queue_capacity; /* events per stream queue (power of two); 0: 65536 */
	uint32_t ring_bytes;     /* kernel ring buffer size per stream; 0: 4 MiB */
	uint32_t drain_ms;       /* longest time between two drains; 0: 10 ms */
	uint32_t flags;          /* enum mr_data_plane_flags */
	int32_t bench_pid;       /* MR_DATA_PLANE_BENCH: the process whose getppid() calls make events */
};

struct mr_stream_stats {
	uint64_t received;       /* events read from the kernel */
	uint64_t delivered;      /* events released by the consumer */
	uint64_t dropped_queue;  /* read from the kernel but the queue was full */
	uint64_t dropped_kernel; /* lost in the kernel: its ring buffer was full */
	uint64_t queued;         /* waiting in the queue now */
};

mr_data_plane *mr_data_plane_open(const struct mr_data_plane_opts *o, char *err, size_t errlen);
/* Starts the draining thread. */
int mr_data_plane_start(mr_data_plane *d, char *err, size_t errlen);
/* Readable when a queue has events; the consumer reads it (8 bytes) to rearm. */
int mr_data_plane_notify_fd(const mr_data_plane *d);
/* The stream's record storage: fixed for the data plane's life, so Lua casts
 * it once. Records are mr_stream_record_size() bytes apart. */
void *mr_stream_storage(const mr_data_plane *d, uint32_t stream);
uint32_t mr_stream_record_size(const mr_data_plane *d, uint32_t stream);
/* The oldest run of queued events that is contiguous in storage: returns
 * how many (at most max) and their first record's index in *index. */
uint32_t mr_stream_peek(mr_data_plane *d, uint32_t stream, uint32_t max, uint32_t *index);
/* Frees the n oldest queued events after the consumer handled them. */
void mr_stream_release(mr_data_plane *d, uint32_t stream, uint32_t n);
/* Benchmark baseline: pops everything queued and counts events per pid in C. */
uint64_t mr_stream_drain_in_c(mr_data_plane *d, uint32_t stream);
void mr_stream_stats(const mr_data_plane *d, uint32_t stream, struct mr_stream_stats *out);
/* Stops the thread, detaches every program, frees everything. */
void mr_data_plane_close(mr_data_plane *d);

/* ----------------------------------------------------------------- metrics */

/* A registry of counters, gauges and histograms exported in Prometheus text
 * format. Series are named by metric name plus an optional label set written
 * as Prometheus labels ("script=\"x\",stream=\"y\""). */
typedef struct mr_metrics mr_metrics;

enum mr_metric_type { MR_COUNTER = 0, MR_GAUGE = 1, MR_HISTOGRAM = 2 };

mr_metrics *mr_metrics_new(void);
void mr_metrics_free(mr_metrics *m);
/* Returns the id of the series (creating it and, when new, its metric),
 * or -1 with a reason in err: bad name or labels, a type clash with an
 * existing metric of that name, out of memory. */
int32_t mr_metrics_series(mr_metrics *m, uint32_t type, const char *name, const char *help,
			  const char *labels, char *err, size_t errlen);
void mr_metrics_add(mr_metrics *m, int32_t series, double v); /* counters, gauges */
void mr_metrics_set(mr_metrics *m, int32_t series, double v); /* gauges */
void mr_metrics_observe(mr_metrics *m, int32_t series, double v); /* histograms */
double mr_metrics_value(const mr_metrics *m, int32_t series);
/* Renders every series as Prometheus text; the string stays valid until the
 * next call. *len receives its length. */
const char *mr_metrics_render(mr_metrics *m, size_t *len);

/* ------------------------------------------------------------- HTTP server */

/* Serves GET /metrics (the registry) and GET /healthz (the text set by
 * mr_http_set_health, 200 when healthy, 503 when not) on a libevent base. */
typedef struct mr_http mr_http;

/* base is a struct event_base *. address is "host:port" (port 0: any). */
mr_http *mr_http_open(void *base, const char *address, mr_metrics *m, char *err, size_t errlen);
/* The port actually bound. */
uint16_t mr_http_port(const mr_http *h);
void mr_http_set_health(mr_http *h, int healthy, const char *text);
void mr_http_close(mr_http *h);

/* ------------------------------------------------------------------ agent */

/* `moonrover agent`: loads the scripts, runs the event loop (event streams,
 * timers, signals, HTTP) until SIGTERM or SIGINT. SIGHUP reloads the scripts. */
struct mr_agent_opts {
	const char *lua_dir;      /* the bundled modules (moonrover.*) */
	const char *scripts_dir;  /* the bundled scripts */
	const char *user_dir;     /* the user's scripts, or NULL */
	const char *http_address; /* "host:port" for /metrics and /healthz; "" disables */
	const char *pid_file;     /* written at start, removed at exit; "" disables */
	uint32_t budget_ms;       /* longest a Lua callback may run */
	uint32_t batch_max;       /* most events handed to one callback */
	uint32_t queue_capacity;  /* events buffered per stream while Lua is busy */
	int32_t log_level;        /* 0 debug, 1 info, 2 warn, 3 error */
	int32_t bench_pid;        /* benchmarks: also stream this process's getppid() calls */
	const char *config_name;  /* the config file scripts read through agent.config(), or NULL */
	const char *config_text;  /* its text, read once at start */
};

/* Returns 0 after a clean stop, or a negative errno with the reason in err. */
int mr_agent_run(const struct mr_agent_opts *o, char *err, size_t errlen);
/* Sends SIGHUP (reload) to the agent whose pid is in pid_file, after
 * checking that it is a running moonrover. Returns its pid, or a negative
 * errno with the reason in err. */
int mr_agent_reload(const char *pid_file, char *err, size_t errlen);

/* ---------------------------------------------------------------- scripts */

/* What a script's Lua code calls, through lua/moonrover/agent.lua. Each
 * script runs in its own Lua state; its handle comes from the agent. During
 * the canary run (a trial of a new version on a copy of recent events),
 * timers are not armed and metric updates are not applied. */
typedef struct mr_script mr_script;

int mr_script_subscribe(mr_script *s, uint32_t stream);
/* Brackets for a script calling any other runtime function: the time budget's
 * interrupt then waits until the call returns (see runtime/watchdog.h).
 * lua/moonrover/rt.lua applies them to every call made from a script. */
void mr_lua_leave(void);
void mr_lua_enter(void);
/* Arms timer id (chosen by the script) to fire after seconds, and again every
 * seconds when repeat is 1. */
int mr_script_timer(mr_script *s, uint32_t id, double seconds, int32_t repeat);
void mr_script_timer_cancel(mr_script *s, uint32_t id);
/* Gives the script its own time budget (10 ms to 60 s) instead of the
 * agent's, for scripts whose calls do bounded but heavy runtime work. */
int mr_script_set_budget(mr_script *s, uint32_t ms);
void mr_script_log(mr_script *s, int32_t level, const char *msg);
int32_t mr_script_metric(mr_script *s, uint32_t type, const char *name, const char *help,
			 const char *labels, char *err, size_t errlen);
void mr_script_metric_add(mr_script *s, int32_t series, double v);
void mr_script_metric_set(mr_script *s, int32_t series, double v);
void mr_script_metric_observe(mr_script *s, int32_t series, double v);

/* --------------------------------------------------------------- transport */

/* gRPC to a backend (SkyWalking OAP) over gRPC C core, on its own thread.
 * Messages cross as serialized protobuf bytes; the caller encodes and
 * decodes. Calls are asynchronous: start one, then collect its result from
 * mr_transport_next() when the notify fd is readable. While the backend is
 * unreachable the channel reconnects with backoff; what is queued beyond
 * queue_bytes is dropped and counted. */
typedef struct mr_transport mr_transport;

struct mr_transport_opts {
	const char *address;        /* "host:port" */
	int32_t tls;                /* 1: TLS */
	const char *ca_path;        /* PEM roots; NULL or "": system roots */
	const char *cert_path;      /* client certificate (mTLS), or NULL */
	const char *key_path;       /* client key (mTLS), or NULL */
	int32_t insecure_skip_verify; /* TLS without verifying the server */
	const char *authentication; /* sent as the "authentication" header; NULL or "": none */
	uint32_t queue_bytes;       /* most bytes waiting to be sent; 0: 64 MiB */
};

enum mr_rpc_state {
	MR_RPC_OK = 0,        /* the call finished with gRPC status OK */
	MR_RPC_FAILED = 1,    /* finished with another status (see code, details) */
};

struct mr_rpc_result {
	int64_t id;           /* the id mr_transport_unary / stream_open returned */
	int32_t state;        /* enum mr_rpc_state */
	int32_t code;         /* gRPC status code */
	const char *details;  /* gRPC status details ("" when none) */
	const void *response; /* the response message bytes (NULL when none) */
	size_t response_len;
};

struct mr_transport_stats {
	uint64_t calls_started, calls_ok, calls_failed, calls_dropped;
	uint64_t messages_sent, bytes_sent, bytes_queued;
	int32_t connected;    /* 1 when the channel is READY */
};

mr_transport *mr_transport_open(const struct mr_transport_opts *o, char *err, size_t errlen);
/* Readable when results are waiting; read it (8 bytes) to rearm. */
int mr_transport_notify_fd(const mr_transport *t);
/* A unary call to method ("/package.Service/Method"). Returns its id (> 0),
 * or a negative errno (-ENOBUFS: over queue_bytes; counted in calls_dropped).
 * The request is copied. timeout_ms 0 means no deadline. While the backend
 * is down, calls fail at once with UNAVAILABLE rather than at their deadline. */
int64_t mr_transport_unary(mr_transport *t, const char *method, const void *request, size_t len,
			   uint32_t timeout_ms);
/* A client-streaming call: open, send messages (copied, sent in order),
 * then finish to get the response as one result. The timeout covers the
 * whole stream. */
int64_t mr_transport_stream_open(mr_transport *t, const char *method, uint32_t timeout_ms);
int mr_transport_stream_send(mr_transport *t, int64_t id, const void *message, size_t len);
int mr_transport_stream_finish(mr_transport *t, int64_t id);
/* Takes the next finished call; 1 when *out was filled (its pointers stay
 * valid until the next call of mr_transport_next), 0 when none is waiting. */
int mr_transport_next(mr_transport *t, struct mr_rpc_result *out);
void mr_transport_stats(const mr_transport *t, struct mr_transport_stats *out);
/* Cancels what is in flight (those results are discarded), stops the thread,
 * frees everything. */
void mr_transport_close(mr_transport *t);

/* --------------------------------------------------------------- processes */

/* Facts about processes for discovery, read from /proc or from the directory
 * named by $ROVER_HOST_PROC_MAPPING (the host's /proc mounted in a container). */

/* Fills pids (capacity max) with the live process ids; returns how many, or
 * a negative errno. A result equal to max means there may be more: retry
 * with more room. */
int32_t mr_proc_list(int32_t *pids, uint32_t max);
/* Reads /proc/PID/<file> ("cmdline" with its NULs turned into spaces, "comm"
 * without its newline, "cgroup", "stat", "status", "environ" as is) into buf
 * (NUL-terminated, truncated to len-1). Returns the length or a negative errno. */
int32_t mr_proc_read(int32_t pid, const char *file, char *buf, size_t len);
/* The target of /proc/PID/exe (or cwd for what = "cwd"). Length or -errno. */
int32_t mr_proc_link(int32_t pid, const char *what, char *buf, size_t len);
/* When the process started, in nanoseconds since boot (CLOCK_BOOTTIME, the
 * clock of /proc/PID/stat's starttime), or 0 when unknown. */
uint64_t mr_proc_start_ns(int32_t pid);
/* 1 when the process's executable has an ELF symbol table (.symtab or
 * .dynsym) that profiling can use, 0 when not, negative errno on error. */
int32_t mr_proc_has_symbols(int32_t pid);

/* POSIX extended regular expressions, for naming rules. */
typedef struct mr_regex mr_regex;

mr_regex *mr_regex_new(const char *pattern, char *err, size_t errlen);
/* 1 when s matches, 0 when not, a negative errno on bad arguments. groups
 * (room for 2 * max_groups values) receives byte offsets, start and end
 * (exclusive), group 0 being the whole match; -1 for groups that did not
 * take part. */
int32_t mr_regex_match(const mr_regex *r, const char *s, int32_t *groups, uint32_t max_groups);
void mr_regex_free(mr_regex *r);

/* ---------------------------------------------------------------- protocol */

/* protoc's descriptor set of proto/skywalking (the SkyWalking v3 messages),
 * which lua/moonrover/protobuf.lua reads to encode and decode them. */
const void *mr_skywalking_descriptors(size_t *len);

/* ------------------------------------------------------------------ checks */

/* Probes one kernel or machine feature by name ("root", "btf", "perf_event",
 * "tracepoint", "tp_btf", "uprobe", "ringbuf", "kallsyms"). Returns 1 when it
 * is usable, 0 when not (detail says why), -1 for an unknown name. */
int mr_check(const char *feature, char *detail, size_t len);

/* ------------------------------------------------------------------ system */

uint64_t mr_monotonic_ns(void);
int32_t mr_self_pid(void);
int mr_process_exists(int pid);
/* Copies the process name of pid into buf; returns 0 or a negative errno. */
int mr_process_comm(int pid, char *buf, size_t len);
/* Reads this process's CPU time and peak RSS. */
int mr_self_usage(uint64_t *cpu_ns, uint64_t *max_rss_kb);
int mr_sleep_ms(int ms);
/* Catches SIGINT and SIGTERM from now on; mr_signal_pending() then returns
 * the last one caught (0 when none), and a blocking poll returns early. */
int mr_signals_catch(void);
int mr_signal_pending(void);
/* Writes a random (version 4) UUID, 36 characters and a NUL; len >= 37.
 * Returns 0 or a negative errno. */
int mr_random_uuid(char *buf, size_t len);
/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
double mr_epoch_ms(void);
/* This host's name, and its first IPv4 address that is not loopback ("" when
 * it has none). Return 0 or a negative errno. */
int mr_host_name(char *buf, size_t len);
int mr_host_ipv4(char *buf, size_t len);

#ifndef MR_FFI_CDEF
#pragma GCC visibility pop
#endif

#endif
