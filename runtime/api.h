/* api.h - the runtime as the bundled Lua sees it: everything lua/ calls, and
 * nothing more (what only specs and benchmarks call is in api_test.h).
 *
 * The build preprocesses this file with MR_FFI_CDEF defined (no system
 * includes, no macros) into the text that lua/moonrover/rt.lua hands to
 * ffi.cdef. Keep it plain C declarations.
 *
 * Conventions, the same for every function:
 * - A function that can fail returns a negative errno (or NULL) and writes
 *   one human-readable line into the caller's err buffer of errlen bytes
 *   (err may be NULL when errlen is 0). rt.lua turns that into `nil, message`.
 * - A process id is an int32_t, as the kernel's pid_t.
 * - Strings returned as const char * stay owned by the object that returned
 *   them; objects are freed by their _free or _close function.
 */
#ifndef MR_API_H
#define MR_API_H

#ifndef MR_FFI_CDEF
#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>
/* The library exports exactly what the api headers declare. */
#pragma GCC visibility push(default)
#else
typedef uint8_t __u8;
typedef int8_t __s8;
typedef int16_t __s16;
typedef uint16_t __u16;
typedef uint32_t __u32;
typedef int32_t __s32;
typedef uint64_t __u64;
#endif

/* Event records shared with the BPF programs. */
#include "events.h"
#include "net.h"

/* ---------------------------------------------------------------- system */

const char *mr_sys_version(void);
const char *mr_sys_build_info(void);
/* CLOCK_MONOTONIC nanoseconds: the clock of the events' timestamps. */
uint64_t mr_sys_monotonic_ns(void);
/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
double mr_sys_epoch_ms(void);
/* Catches SIGINT and SIGTERM from now on; mr_sys_signal_pending() then
 * returns the last one caught (0 when none), and a blocking poll returns early. */
int mr_sys_signals_catch(char *err, size_t errlen);
int mr_sys_signal_pending(void);
/* Writes a random (version 4) UUID, 36 characters and a NUL; len >= 37. */
int mr_sys_random_uuid(char *buf, size_t len, char *err, size_t errlen);
/* This host's name, and its first IPv4 address that is not loopback ("" when
 * it has none). */
int mr_sys_hostname(char *buf, size_t len, char *err, size_t errlen);
int mr_sys_ipv4(char *buf, size_t len, char *err, size_t errlen);
/* The first IPv4 address of the interface named ifname ("" when it has none
 * or there is no such interface): Rover's {{.Rover.HostIPV4 "eth0"}}. */
int mr_sys_ipv4_of(const char *ifname, char *buf, size_t len, char *err, size_t errlen);
/* 1 when standard error is a terminal (live status lines go there), else 0. */
int mr_sys_stderr_is_tty(void);

/* ----------------------------------------------------------------- kernel */

/* Probes one kernel or machine feature by name ("root", "btf", "perf_event",
 * "tracepoint", "tp_btf", "uprobe", "ringbuf", "kallsyms") for real: load,
 * attach, fire. Returns 1 when it is usable, 0 when not, -EPERM when this
 * user is not allowed to use it; detail says why in every case. -EINVAL for
 * an unknown name. */
int mr_kernel_check(const char *feature, char *detail, size_t len);
/* The features mr_kernel_check knows, in the order `moonrover check` shows
 * them: the name of feature i, or NULL past the last. */
const char *mr_kernel_feature(uint32_t i);
/* What moonrover needs to be allowed to work: "root (or CAP_BPF, ...)". */
const char *mr_kernel_privileges(void);

/* ------------------------------------------------------------ profile data */

/* A profile: symbolized stacks with counts, frames and modules interned. The
 * arrays returned below stay valid until the profile is next modified. */
typedef struct mr_profile mr_profile;

enum mr_frame_kind {
	MR_FRAME_USER = 0,   /* code in an executable or shared library */
	MR_FRAME_KERNEL = 1, /* kernel text */
	MR_FRAME_JIT = 2,    /* named by a /tmp/perf-PID.map file */
	MR_FRAME_UNKNOWN = 3 /* no mapping covers the address */
};

struct mr_frame {
	uint32_t name;     /* string id: function, or "module+0xoffset" */
	uint32_t module;   /* module id; 0 means none */
	uint64_t address;  /* offset in the module file, or the kernel address */
	uint32_t kind;     /* enum mr_frame_kind */
	uint32_t resolved; /* 1 when name is a real symbol */
};

struct mr_module {
	uint32_t path;       /* string id of the file path */
	uint32_t build_id;   /* string id of the hex build-id ("" when none) */
	uint32_t executable; /* 1 when it is the executable of some sampled process */
};

struct mr_sample {
	int32_t pid;
	uint32_t comm;   /* string id of the process name */
	int32_t tid;     /* thread id in per-thread profiles, else 0 */
	uint32_t thread; /* string id of the thread's name ("" when tid is 0) */
	uint32_t first;  /* index of the leaf frame in mr_profile_stack_frames() */
	uint32_t depth;  /* number of frames, leaf first */
	uint64_t count;  /* samples (on-CPU) or context switches (off-CPU) */
	uint64_t nanos;  /* on-CPU time, or blocked time */
};

mr_profile *mr_profile_new(char *err, size_t errlen);
void mr_profile_free(mr_profile *p);
/* The text of string id ("" for an unknown id). */
const char *mr_profile_string(const mr_profile *p, uint32_t id);
uint32_t mr_profile_sample_count(const mr_profile *p);
const struct mr_sample *mr_profile_samples(const mr_profile *p);
const uint32_t *mr_profile_stack_frames(const mr_profile *p);
const struct mr_frame *mr_profile_frames(const mr_profile *p);
/* Adds the samples of src whose pid is one of pids (ascending; every sample
 * when npids is 0) into dst, summing counts and nanos of stacks dst already has. */
int mr_profile_copy(mr_profile *dst, const mr_profile *src, const int32_t *pids, uint32_t npids, char *err,
		    size_t errlen);

/* ------------------------------------------------------------------- files */

/* Reads the file a user named (the --config file) whole, opening it once,
 * into buf: only a regular file (links followed) of at most cap bytes. A
 * FIFO, device or directory is refused without blocking. Returns the
 * length read (buf is not NUL-terminated). */
int64_t mr_text_file_read(const char *path, char *buf, size_t cap, char *err, size_t errlen);

/* ----------------------------------------------------------------- outputs */

/* An output file (runtime/files/output_file.c): written into a new unnamed
 * file in path's directory (a temporary file beside path where the file
 * system has no O_TMPFILE), every write checked, then synced and put in place
 * over path by mr_output_commit; a failure leaves path as it was, a killed run
 * leaves nothing. A path that is a symbolic link is refused; a FIFO or
 * character device is written in place. "-" is standard output. A failed
 * write or commit names path and the directory of the temporary file. */
typedef struct mr_output mr_output;

mr_output *mr_output_open(const char *path, char *err, size_t errlen);
int mr_output_write(mr_output *o, const void *data, size_t len, char *err, size_t errlen);
/* Finishes and frees o: 0, or the first error met writing it. */
int mr_output_commit(mr_output *o, char *err, size_t errlen);
/* Drops what was written and frees o. */
void mr_output_abort(mr_output *o);

/* Writes the profile as gzipped pprof (profile.proto) into out (commit it
 * after). off_cpu selects the sample types; period_ns is the sampling period
 * of on-CPU profiles (off-CPU ones get 1). Samples carry pid and comm labels
 * (and tid and thread in per-thread profiles); the process is no frame.
 * main_file names the main mapping, pprof's "File:" (a profile of many
 * processes has no main binary); NULL: the sampled executable. A failed
 * write returns its negative errno with what failed and where the data was
 * going in err, without the path: the caller says "cannot write PATH: " and
 * aborts out. */
int mr_pprof_write(const mr_profile *p, mr_output *out, int32_t off_cpu, uint64_t period_ns,
		   uint64_t duration_ns, const char *main_file, char *err, size_t errlen);

/* ---------------------------------------------------------------- profiler */

typedef struct mr_profiler mr_profiler;

/* How user stacks are walked. */
enum mr_unwind_mode {
	MR_UNWIND_MODE_FP = 0,  /* frame pointers, by the kernel's walker */
	MR_UNWIND_MODE_CFI = 1, /* unwind tables from .eh_frame, frame pointers where there are none */
};

struct mr_profiler_opts {
	uint32_t frequency;  /* on-CPU sampling frequency, Hz */
	int32_t off_cpu;     /* 1: blocked time from sched_switch instead */
	int32_t kernel;      /* 1: keep kernel frames */
	const int32_t *pids; /* processes to profile; NULL: every process */
	uint32_t npids;
	uint32_t max_stacks;         /* stack map entries; 0: default */
	uint64_t duration_ns;        /* nothing is counted past this long after start; 0: until stopped */
	int32_t unwind;              /* enum mr_unwind_mode */
	int32_t per_thread;          /* 1: samples of each thread apart (struct mr_sample's tid) */
	uint64_t unwind_table_bytes; /* bound on the unwind tables' kernel memory; 0: default */
};

struct mr_profiler_stats {
	uint64_t samples;           /* samples (or switches) aggregated in the kernel */
	uint64_t idle_samples;      /* on-CPU samples of idle CPUs, not profiled */
	uint64_t lost_user_stack;   /* user stack could not be read */
	uint64_t lost_stack_full;   /* stack storage full */
	uint64_t lost_stack_nomem;  /* no kernel memory to store a stack */
	uint64_t lost_counts_full;  /* count map full */
	uint64_t lost_counts_nomem; /* no kernel memory to count a stack */
	uint64_t lost_notify;       /* new-process notices dropped (ring full) */
	uint64_t lost_offcpu_start; /* blocked-since map full */
	uint64_t processes;         /* distinct processes seen */
	uint64_t tracked;           /* processes whose mappings are held now */
	uint64_t stacks;            /* distinct (pid, stack) keys drained */
	uint64_t deferred;          /* stacks whose naming was put off to a later drain */
	uint64_t truncated_stacks;  /* user stacks cut at a frame outside executable code */
	uint64_t first_sample_ns;   /* CLOCK_MONOTONIC time of the first sample, 0 if none */
	uint64_t start_ns;          /* CLOCK_MONOTONIC time the profiler was attached */
	uint64_t unwind_cfi_stacks; /* user stacks walked with unwind tables */
	uint64_t unwind_fp_stacks;  /* user stacks walked by frame pointer: their process had no tables yet */
	uint64_t unwind_fp_frames; /* frames of CFI walks unwound by frame pointer (no table for the address) */
	uint64_t unwind_truncated; /* user stacks cut at the depth limit */
	int32_t unwind_mode;       /* enum mr_unwind_mode in use: fp when the kernel refused cfi */
	uint32_t pad;
};

/* The user-stack unwinder of a profile with unwind = MR_UNWIND_MODE_CFI. */
struct mr_unwind_stats {
	uint64_t tables;              /* unwind tables loaded in the kernel now */
	uint64_t table_bytes;         /* their kernel memory */
	uint64_t built;               /* tables built (files parsed) */
	uint64_t hits;                /* mappings that found their file's table already built */
	uint64_t evicted;             /* tables dropped to stay under the memory bound */
	uint64_t not_loaded;          /* tables built but not loaded (memory bound reached) */
	uint64_t files_without_table; /* files without .eh_frame / .eh_frame_hdr: walked by frame pointer */
	uint64_t rows;                /* rows of the tables built */
	uint64_t unsupported_rows;    /* CFI rows the compact form cannot hold (frame pointers there) */
	uint64_t build_ns;            /* time spent building tables */
	uint64_t processes;           /* processes given their mappings */
	uint64_t mappings_dropped;    /* executable mappings past MR_UNWIND_MAX_MAPPINGS of a process */
	uint64_t built_on_demand;     /* tables built when the walker first needed them */
};

mr_profiler *mr_profiler_open(const struct mr_profiler_opts *o, char *err, size_t errlen);
int mr_profiler_start(mr_profiler *p, char *err, size_t errlen);
/* Waits up to timeout_ms for kernel notices and handles them (new processes
 * get their mappings captured). Returns the number handled (0 when a signal
 * cut the wait short). */
int mr_profiler_poll(mr_profiler *p, int32_t timeout_ms, char *err, size_t errlen);
/* Moves what was counted so far into prof, symbolized. Nothing is lost
 * between drains: the kernel counts into a second map while one is read.
 * Each drain parses a bounded number of new ELF files; a stack that needs
 * more is left counting in the kernel and named at a later drain. After
 * mr_profiler_stop, a drain takes everything, whatever it costs. */
int mr_profiler_drain(mr_profiler *p, mr_profile *prof, char *err, size_t errlen);
void mr_profiler_stop(mr_profiler *p);
/* Adds pid to (add = 1) or removes it from (add = 0) the processes a profiler
 * opened with pids samples, while it runs: profiles that share one profiler
 * change its set as they start and end. -EINVAL for a profiler of every
 * process. */
int mr_profiler_target(mr_profiler *p, int32_t pid, int32_t add, char *err, size_t errlen);
void mr_profiler_stats(const mr_profiler *p, struct mr_profiler_stats *out);
/* The unwinder's figures; all zero when user stacks are walked by frame pointer. */
void mr_profiler_unwind_stats(const mr_profiler *p, struct mr_unwind_stats *out);
void mr_profiler_close(mr_profiler *p);

/* ----------------------------------------------------------- event streams */

/* The event streams (see runtime/dataplane): each delivers batches of one
 * record type from bpf/events.h or bpf/net.h, of a fixed size but for
 * MR_STREAM_NET, whose records carry a copy of the bytes moved. */
enum mr_stream {
	MR_STREAM_PROCESS = 0, /* struct mr_process_event */
	/* 1: the benchmark's stream (MR_STREAM_BENCH, runtime/api_test.h). It
	 * is numbered among these because every per-stream array (the data
	 * plane's rings and queues, the agent's series, the scripts' recent
	 * events) is indexed by stream, and the benchmark must go through the
	 * very same path; only mr_agent_run_bench, for specs and benchmarks,
	 * ever opens it. */
	MR_STREAM_TCP = 2, /* struct mr_tcp_event, with MR_DATA_PLANE_NET */
	MR_STREAM_NET = 3, /* struct mr_net_data + payload (variable size), with MR_DATA_PLANE_NET */
	MR_STREAM_COUNT = 4
};

/* BPF programs feeding ring buffers, a thread draining them into one bounded
 * queue per stream, and an eventfd that becomes readable when a queue has
 * events. It keeps draining while the consumer (Lua) is slow or stuck; what
 * does not fit in a queue is dropped and counted. */
typedef struct mr_data_plane mr_data_plane;

enum mr_data_plane_flags {
	MR_DATA_PLANE_NET = 2, /* also trace TCP connections and their bytes (bpf/net.bpf.c) */
	/* with MR_DATA_PLANE_NET only: no MR_STREAM_PROCESS, bpf/process.bpf.c
	 * not loaded (a consumer that reads no process events copies none) */
	MR_DATA_PLANE_NO_PROCESS = 4,
};

struct mr_data_plane_opts {
	uint32_t queue_capacity; /* events per fixed-size stream queue (power of two; the tcp
				    stream's: an eighth); 0: 65536 */
	uint32_t ring_bytes;     /* kernel ring buffer size per stream but net; 0: 512 KiB */
	uint32_t drain_ms;       /* longest time between two drains; 0: 10 ms */
	uint32_t flags;          /* enum mr_data_plane_flags */
	/* MR_DATA_PLANE_NET: the bytes copied of each socket read or write (0:
	 * MR_NET_PAYLOAD_DEFAULT, at most MR_NET_PAYLOAD_MAX); the net stream's
	 * queue in bytes (0: 8 MiB; its memory is taken as records come and
	 * given back once they stop); the processes traced (NULL: all but this
	 * one); the most connections tracked at once (0: 65536); the net
	 * stream's kernel ring in bytes (0: 512 KiB per possible CPU; resident
	 * twice over from the start). */
	uint32_t net_payload_bytes;
	uint32_t net_queue_bytes;
	const int32_t *net_pids;
	uint32_t net_npids;
	uint32_t net_max_connections;
	uint32_t net_ring_bytes;
};

struct mr_data_plane_stream_stats {
	uint64_t received;       /* events read from the kernel */
	uint64_t delivered;      /* events released by the consumer */
	uint64_t dropped_queue;  /* read from the kernel but the queue was full */
	uint64_t dropped_kernel; /* lost in the kernel: its ring buffer was full */
	uint64_t queued;         /* waiting in the queue now */
};

mr_data_plane *mr_data_plane_open(const struct mr_data_plane_opts *o, char *err, size_t errlen);
/* Attaches the programs and starts the draining thread. */
int mr_data_plane_start(mr_data_plane *d, char *err, size_t errlen);
/* Readable when a queue has events; the consumer reads it (8 bytes) to rearm. */
int mr_data_plane_notify_fd(const mr_data_plane *d);
/* For a consumer without an event loop: waits up to timeout_ms for queued
 * events and rearms the notification. 1 when some arrived, 0 on timeout or
 * when a signal cut the wait short. */
int mr_data_plane_wait(mr_data_plane *d, int32_t timeout_ms);
/* The stream's record storage: fixed for the data plane's life, so Lua casts
 * it once (NULL for a stream that is off). Records of a fixed-size stream
 * are mr_data_plane_record_size() bytes apart (0 for MR_STREAM_NET). */
void *mr_data_plane_storage(const mr_data_plane *d, uint32_t stream);
uint32_t mr_data_plane_record_size(const mr_data_plane *d, uint32_t stream);
/* A fixed-size stream's oldest run of queued events that is contiguous in
 * storage: returns how many (at most max) and their first record's index in
 * *index. */
uint32_t mr_data_plane_peek(mr_data_plane *d, uint32_t stream, uint32_t max, uint32_t *index);
/* Frees the n oldest queued events after the consumer handled them. */
void mr_data_plane_release(mr_data_plane *d, uint32_t stream, uint32_t n);
/* MR_STREAM_NET's oldest contiguous run (at most max records): how many,
 * the byte offset in storage of the first one's 8-byte prefix (a uint32_t
 * size, then 4 bytes unused; the record follows it and the next prefix is at
 * the record's end rounded up to 8) and the run's length in bytes. */
uint32_t mr_data_plane_peek_bytes(mr_data_plane *d, uint32_t stream, uint32_t max, uint32_t *offset,
				  uint32_t *bytes);
void mr_data_plane_release_bytes(mr_data_plane *d, uint32_t stream, uint32_t n, uint32_t bytes);
void mr_data_plane_stream_stats(const mr_data_plane *d, uint32_t stream,
				struct mr_data_plane_stream_stats *out);
/* MR_DATA_PLANE_NET: asks the kernel to copy a connection's bytes
 * (MR_NET_CAPTURE) or only count them (MR_NET_COUNT). */
int mr_data_plane_net_verdict(mr_data_plane *d, uint64_t conn, uint32_t verdict, char *err, size_t errlen);
/* MR_DATA_PLANE_NET: the bytes of direction (enum mr_net_direction) before
 * stream offset skip_to are not copied (a body the parser does not need): a
 * read or write wholly before it is not recorded, one that crosses it
 * copies from skip_to on (struct mr_net_data's skipped). Keeps the verdict;
 * a skip_to at or below the one asked before changes nothing. 0, -EINVAL
 * (direction), -ENOTCONN (no network tracer) or the map's errno. */
int mr_data_plane_net_capture(mr_data_plane *d, uint64_t conn, uint32_t direction, uint64_t skip_to,
			      char *err, size_t errlen);
/* MR_DATA_PLANE_NET opened with net_pids: adds pid to (add = 1) or removes it
 * from (add = 0) the processes traced, while it runs (`trace -p` follows a
 * process's children). -EINVAL when it traces every process, -E2BIG when
 * the map of traced processes (MR_PID_FILTER_MAX, bpf/pid_filter.h) is full. */
int mr_data_plane_net_target(mr_data_plane *d, int32_t pid, int32_t add, char *err, size_t errlen);
/* MR_DATA_PLANE_NET: the kernel side's counters (all 0 without it). */
void mr_data_plane_net_counters(const mr_data_plane *d, struct mr_net_counters *out);
/* MR_DATA_PLANE_NET: the connections the kernel follows now (its map's
 * entries, counted again at most once a second; 0 without it). */
uint64_t mr_data_plane_net_conn_count(mr_data_plane *d);
/* 1: the kernel still follows connection conn, 0: it does not (closed, or
 * never seen); -ENOTCONN without the network tracer. */
int mr_data_plane_net_conn_open(mr_data_plane *d, uint64_t conn);
/* Stops the thread, detaches every program, frees everything. */
void mr_data_plane_close(mr_data_plane *d);

/* ----------------------------------------------------------------- metrics */

enum mr_metric_type { MR_COUNTER = 0, MR_GAUGE = 1, MR_HISTOGRAM = 2 };
/* The most bucket bounds a histogram may have (+Inf is added to them). */
enum mr_histogram_limits { MR_HISTOGRAM_BOUNDS_MAX = 32 };

/* ------------------------------------------------------------- kubernetes */

/* The Kubernetes API client, one per agent (runtime/kube/): lists then
 * watches the pods of one node and every service on its own thread, keeps
 * them (managedFields removed) with a change log, and fetches single
 * objects (a pod's owners) by path. TLS is always verified. */
struct mr_kube;
struct mr_kube_opts {
	const char *server;     /* "https://host:port" */
	const char *ca_pem;     /* PEM text of the CA bundle, or NULL: system CAs */
	const char *token;      /* bearer token, or NULL */
	const char *token_file; /* re-read when it changes; wins over token; or NULL */
	const char *cert_pem;   /* client certificate PEM, or NULL */
	const char *key_pem;    /* its key PEM, or NULL */
	const char *node_name;  /* required */
	const char *namespaces; /* "" or NULL: all; else "a,b" */
};
struct mr_kube *mr_kube_open(const struct mr_kube_opts *o, char *err, size_t errlen);
/* Joins the thread and frees everything. */
void mr_kube_close(struct mr_kube *k);
/* GET /api/v1/nodes/<node_name>, blocking up to timeout_ms: 0 when it
 * exists; -ENOENT with err "node \"x\" not found" (404); another negative
 * errno with err otherwise. */
int mr_kube_check_node(struct mr_kube *k, uint32_t timeout_ms, char *err, size_t errlen);
/* Starts the list+watch thread (after check_node). 0 or a negative errno
 * with err. */
int mr_kube_start(struct mr_kube *k, char *err, size_t errlen);
/* Changes after *cursor (0 at first): JSON lines written into buf, each
 * {"kind":"pod"|"service","type":"ADDED"|"MODIFIED"|"DELETED"|"SYNCED","object":{...}}
 * ("SYNCED" has no object: that kind's first full list is in). When
 * *cursor is older than the log keeps, the answer starts with
 * {"type":"RESET"} followed by every current object as ADDED and a SYNCED
 * per synced kind, all in one answer. Returns bytes written (0: nothing
 * new), -1 with errno (ENOBUFS: the next record, or the RESET answer, needs
 * a larger buf); advances *cursor past what it wrote (a record that does
 * not fit stays for the next call). */
int64_t mr_kube_changes(struct mr_kube *k, uint64_t *cursor, char *buf, size_t cap);
/* One object by API path ("/apis/apps/v1/namespaces/shop/replicasets/cart-7d9"):
 * >0 bytes of JSON in buf (cached, refreshed after 10 min); 0: not fetched
 * yet (a GET is queued, ask again later); -1 with errno ENOENT for 404, EIO
 * other errors (retried after backoff), ENOBUFS when buf is too small. */
int64_t mr_kube_get(struct mr_kube *k, const char *path, char *buf, size_t cap);
struct mr_kube_status {
	int32_t connected; /* last request reached the server */
	int32_t pods_synced, services_synced;
	uint64_t lists, watches, relists_gone, watch_drops, errors, events, objects_pods, objects_services;
	char last_error[256];
};
void mr_kube_status(struct mr_kube *k, struct mr_kube_status *s);

/* ------------------------------------------------------------------ agent */

/* `moonrover agent`: loads the scripts, runs the event loop (event streams,
 * timers, signals, HTTP) until SIGTERM or SIGINT. SIGHUP reloads the scripts. */
struct mr_agent_opts {
	const char *lua_dir;           /* the bundled modules (moonrover.*) */
	const char *scripts_dir;       /* the bundled scripts */
	const char *user_dir;          /* the user's scripts, or NULL */
	const char *http_address;      /* "host:port" for /metrics and /healthz; "" disables */
	uint32_t http_max_connections; /* open at once; a new one closes another (0: 64) */
	uint32_t http_timeout_ms;      /* a request's whole time on the endpoint (0: 10000) */
	const char *pid_file;          /* created and locked at start, removed at exit; "" disables */
	uint32_t budget_ms;            /* longest a Lua callback may run */
	uint32_t batch_max;            /* most events handed to one callback */
	uint32_t queue_capacity;       /* events buffered per stream while Lua is busy */
	int32_t log_level;             /* 0 debug, 1 info, 2 warn, 3 error */
	const char *config_name;       /* the config file scripts read through agent.config(), or NULL */
	const char *config_text;       /* its text, read once at start */
	/* The scripts: each one's memory budget in MiB unless it sets its own
	 * (0: 128); 1 to refuse to start unless every script starts; 1 to run
	 * the user's scripts even where others could change them; the bundled
	 * scripts not to run (names separated by ',', or NULL). */
	uint32_t script_memory_mib;
	int32_t strict;
	int32_t unsafe_scripts;
	const char *bundled_skip;
	/* The network tracer (bpf/net.bpf.c): 1 to trace TCP connections and
	 * their bytes (the streams MR_STREAM_TCP and MR_STREAM_NET); the bytes
	 * copied of each socket read or write (0: MR_NET_PAYLOAD_DEFAULT); the
	 * most connections tracked at once (0: 65536); the kernel ring of the
	 * socket records in bytes (0: the data plane's default). Where the kernel
	 * cannot, the agent says why in one line and runs without it. */
	int32_t network;
	uint32_t net_payload_bytes;
	uint32_t net_max_connections;
	uint32_t net_ring_bytes;
	/* The Kubernetes client the scripts read (mr_agent_kube), or NULL: the
	 * agent uses it and never closes it; its caller does, after the run. */
	struct mr_kube *kube;
};

/* Returns 0 after a clean stop. */
int mr_agent_run(const struct mr_agent_opts *o, char *err, size_t errlen);
/* What the agent answered a reload: outcome is MR_RELOAD_ASKED when not
 * waited for; detail is what it did ("loaded 3 script(s)") or why it
 * refused. */
enum mr_agent_reload_outcome {
	MR_RELOAD_ASKED = 0,
	MR_RELOAD_DONE = 1,
	MR_RELOAD_REFUSED = 2,
	MR_RELOAD_NO_ANSWER = 3
};
struct mr_agent_reload_answer {
	int32_t outcome;
	char detail[1024];
};
/* Sends SIGHUP (reload) to the agent whose pid is in pid_file, after
 * checking that this process holds the file's lock (a stale file or another
 * command is refused); then, unless wait_ms is 0, waits up to wait_ms for
 * the outcome of a reload tried after the signal, which the agent writes
 * into its status file (pid_file with ".status" added). Returns its pid. */
int32_t mr_agent_reload(const char *pid_file, uint32_t wait_ms, struct mr_agent_reload_answer *answer,
			char *err, size_t errlen);
/* The first line of /healthz becomes "degraded: WHAT since TIME (DETAIL)"
 * (TIME in UTC; DETAIL may be NULL or "") until mr_agent_health_restore
 * makes it "ok" again. A degraded agent still answers 200: it runs, and a
 * restart would not mend what is degraded (OAP being unreachable, say). */
int mr_agent_health_degrade(const char *what, double since_epoch_ms, const char *detail, char *err,
			    size_t errlen);
void mr_agent_health_restore(void);
/* The agent's Kubernetes client (mr_agent_opts.kube), or NULL: any script state. */
struct mr_kube *mr_agent_kube(void);

/* ---------------------------------------------------------------- scripts */

/* What a script's Lua code calls, through lua/moonrover/agent.lua. Each
 * script runs in its own Lua state; its handle comes from the agent. During
 * the canary run (a trial of a new version on a copy of recent events),
 * timers are not armed and metric updates are not applied. */
typedef struct mr_script mr_script;

int mr_script_subscribe(mr_script *s, uint32_t stream, char *err, size_t errlen);
/* Brackets around every other runtime call made from a script: the time
 * budget's interrupt then waits until the call returns (see
 * runtime/script_host/watchdog.h). lua/moonrover/rt.lua applies them. */
void mr_script_call_begin(void);
void mr_script_call_end(void);
/* Arms timer id (chosen by the script) to fire after seconds (0.001 to a
 * year), and again every seconds when repeat is 1. */
int mr_script_timer(mr_script *s, uint32_t id, double seconds, int32_t repeat, char *err, size_t errlen);
void mr_script_timer_cancel(mr_script *s, uint32_t id);
/* Gives the script its own time budget (10 ms to 60 s) instead of the
 * agent's, for scripts whose calls do bounded but heavy runtime work. A
 * larger budget also applies to the call in progress (such as the load). */
int mr_script_set_budget(mr_script *s, uint32_t ms, char *err, size_t errlen);
/* Gives the script its own memory budget (1 MiB to 64 GiB) instead of the
 * agent's --script-memory; it takes effect at once. */
int mr_script_set_memory_budget(mr_script *s, uint32_t mib, char *err, size_t errlen);
/* The script's memory budget in bytes: its own, else the agent's. */
uint64_t mr_script_memory_budget(mr_script *s);
void mr_script_log(mr_script *s, int32_t level, const char *msg);
/* The id of the series name{labels} (labels as Prometheus writes them:
 * `a="x",b="y"`), created on first use; the same id after a reload. */
int32_t mr_script_metric(mr_script *s, uint32_t type, const char *name, const char *help, const char *labels,
			 char *err, size_t errlen);
/* The same for a histogram with its own bucket bounds (see
 * mr_metrics_histogram in api_test.h); nbounds 0: the default bounds. */
int32_t mr_script_histogram(mr_script *s, const char *name, const char *help, const char *labels,
			    const double *bounds, uint32_t nbounds, char *err, size_t errlen);
/* The three metric updates bracket themselves (the time budget's interrupt
 * waits until they return), never lock, allocate or fail and ignore a
 * series id they do not know: rt.lua calls them unbracketed (rt.lock_free). */
void mr_script_metric_add(mr_script *s, int32_t series, double v);
void mr_script_metric_set(mr_script *s, int32_t series, double v);
void mr_script_metric_observe(mr_script *s, int32_t series, double v);
/* Asks the kernel to copy a connection's bytes (MR_NET_CAPTURE) or only count
 * them (MR_NET_COUNT): the network tracer's decision, see
 * mr_data_plane_net_verdict. A canary's verdicts are not applied. */
int mr_script_net_verdict(mr_script *s, uint64_t conn, uint32_t verdict, char *err, size_t errlen);
/* mr_data_plane_net_conn_open of the agent's data plane (-ENOTCONN when the
 * network tracer is off). */
int mr_script_net_conn_open(mr_script *s, uint64_t conn);
/* mr_data_plane_net_capture of the agent's data plane; a canary's requests
 * are not applied. */
int mr_script_net_capture(mr_script *s, uint64_t conn, uint32_t direction, uint64_t skip_to, char *err,
			  size_t errlen);

/* --------------------------------------------------------------- transport */

/* gRPC to a backend (SkyWalking OAP) over gRPC C core, on its own thread.
 * Messages cross as serialized protobuf bytes; the caller encodes and
 * decodes. Calls are asynchronous: start one, then collect its result from
 * mr_transport_next(). While the backend is unreachable the channel
 * reconnects with backoff; what is queued beyond queue_bytes is dropped and
 * counted. */
typedef struct mr_transport mr_transport;

struct mr_transport_opts {
	const char *address;          /* "host:port" */
	int32_t tls;                  /* 1: TLS */
	const char *ca_path;          /* PEM roots; NULL or "": system roots */
	const char *cert_path;        /* client certificate (mTLS), or NULL */
	const char *key_path;         /* client key (mTLS), or NULL */
	int32_t insecure_skip_verify; /* TLS without verifying the server */
	const char *authentication;   /* sent as the "authentication" header; NULL or "": none */
	uint32_t queue_bytes;         /* most bytes waiting to be sent; 0: 64 MiB */
};

enum mr_rpc_state {
	MR_RPC_OK = 0,     /* the call finished with gRPC status OK */
	MR_RPC_FAILED = 1, /* finished with another status (see code, details) */
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
	int32_t connected; /* 1 when the channel is READY */
};

mr_transport *mr_transport_open(const struct mr_transport_opts *o, char *err, size_t errlen);
/* A unary call to method ("/package.Service/Method"). Returns its id (> 0);
 * -ENOBUFS when over queue_bytes (counted in calls_dropped). The request is
 * copied. timeout_ms 0 means no deadline. While the backend is down, calls
 * fail at once with UNAVAILABLE rather than at their deadline. */
int64_t mr_transport_unary(mr_transport *t, const char *method, const void *request, size_t len,
			   uint32_t timeout_ms, char *err, size_t errlen);
/* A client-streaming call: open, send messages (copied, sent in order),
 * then finish to get the response as one result. The timeout covers the
 * whole stream. */
int64_t mr_transport_stream_open(mr_transport *t, const char *method, uint32_t timeout_ms, char *err,
				 size_t errlen);
int mr_transport_stream_send(mr_transport *t, int64_t id, const void *message, size_t len, char *err,
			     size_t errlen);
int mr_transport_stream_finish(mr_transport *t, int64_t id, char *err, size_t errlen);
/* Takes the next finished call: 1 when *out was filled (its pointers stay
 * valid until the next call of mr_transport_next), 0 when none is waiting. */
int mr_transport_next(mr_transport *t, struct mr_rpc_result *out);
void mr_transport_stats(const mr_transport *t, struct mr_transport_stats *out);
/* Cancels what is in flight (those results are discarded), stops the thread,
 * frees everything. */
void mr_transport_close(mr_transport *t);

/* --------------------------------------------------------------- processes */

/* Facts about processes for discovery, read from /proc or from the directory
 * named by $ROVER_HOST_PROC_MAPPING (the host's /proc mounted in a container). */

int32_t mr_proc_self(void);
/* 1 when pid is a live process, 0 when not. */
int32_t mr_proc_exists(int32_t pid);
/* Fills pids (capacity max) with the live process ids; returns how many. A
 * result equal to max means there may be more: retry with more room. */
int32_t mr_proc_list(int32_t *pids, uint32_t max, char *err, size_t errlen);
/* Reads /proc/PID/<file> ("cmdline" with its NULs turned into spaces, "comm"
 * without its newline, "cgroup", "mountinfo", "stat", "status", "environ" as
 * is) into buf (NUL-terminated, cut to len-1). Returns the length. */
int32_t mr_proc_read(int32_t pid, const char *file, char *buf, size_t len, char *err, size_t errlen);
/* The target of /proc/PID/exe (or cwd for what = "cwd"). Returns the length. */
int32_t mr_proc_link(int32_t pid, const char *what, char *buf, size_t len, char *err, size_t errlen);
/* When the process started, in nanoseconds since boot (CLOCK_BOOTTIME, the
 * clock of /proc/PID/stat's starttime), or 0 when unknown. */
uint64_t mr_proc_start_ns(int32_t pid);
/* 1 when the process's executable has an ELF symbol table (.symtab or
 * .dynsym) that profiling can use, 0 when not. */
int32_t mr_proc_has_symbols(int32_t pid, char *err, size_t errlen);

/* ------------------------------------------------------ watching processes */

/* What watching a process reads of it (moonrover.processes): one read of
 * /proc/PID/stat (below the same proc root as above). */
struct mr_proc_stat {
	int32_t pid;          /* 0 when the process could not be read (it exited) */
	int32_t threads;      /* its threads now */
	double cpu_seconds;   /* user + system CPU time of all its threads so far */
	uint64_t start_ticks; /* when it started, clock ticks since boot: with pid, names it */
	double start_seconds; /* the same in seconds since boot (CLOCK_BOOTTIME) */
	uint64_t rss_bytes;   /* resident memory */
	char comm[16];        /* its name */
};
/* Reads the n pids into out[0 .. n-1], in order; a pid that cannot be read
 * (it exited, or pid <= 0) leaves its record zeroed. Returns how many were
 * read, or -EINVAL for NULL arrays. Never blocks on anything but /proc. */
int32_t mr_proc_stat_read(const int32_t *pids, uint32_t n, struct mr_proc_stat *out);

/* A sampler's reader: it keeps the stat files of the pids it reads open
 * between reads (up to a quarter of the open-file limit in all), which
 * halves the cost of reading the same processes again; a file is closed when
 * a read does not ask for its pid. A script's readers are closed with it. */
typedef struct mr_proc_watch mr_proc_watch;
mr_proc_watch *mr_proc_watch_new(char *err, size_t errlen);
void mr_proc_watch_free(mr_proc_watch *w);
/* As mr_proc_stat_read, through w's kept files. */
int32_t mr_proc_watch_read(mr_proc_watch *w, const int32_t *pids, uint32_t n, struct mr_proc_stat *out);

struct mr_proc_system {
	double load1, load5, load15; /* the load averages of /proc/loadavg */
	int32_t cpus;                /* CPUs online */
};
int32_t mr_proc_system_read(struct mr_proc_system *out, char *err, size_t errlen);
/* When the machine booted, in seconds since the Unix epoch: the whole second
 * the kernel gives (btime in the proc root's stat file, as ps reads it), the
 * same for every caller; CLOCK_REALTIME minus CLOCK_BOOTTIME when there is
 * none. */
double mr_proc_boot_epoch(void);

/* POSIX extended regular expressions, for naming rules. */
typedef struct mr_regex mr_regex;

mr_regex *mr_regex_new(const char *pattern, char *err, size_t errlen);
/* 1 when s matches, 0 when not. groups (room for 2 * max_groups values)
 * receives byte offsets, start and end (exclusive), group 0 being the whole
 * match; -1 for groups that did not take part. */
int32_t mr_regex_match(const mr_regex *r, const char *s, int32_t *groups, uint32_t max_groups, char *err,
		       size_t errlen);
void mr_regex_free(mr_regex *r);

/* ----------------------------------------------------------- HTTP/1 heads */

/* One scan of an HTTP/1 head for lua/moonrover/net/protocols/http1.lua
 * (runtime/netparse/http1_scan.c), so that the per-message path runs no short
 * Lua loops (LuaJIT compiles those poorly). These functions never read at or
 * past n, never allocate, never lock and never fail: rt.lua calls them
 * without the script bracket (rt.lock_free). Indexes are into p. */
enum {
	MR_HTTP1_INCOMPLETE = -1, /* the head's end is not in p[0..n) */
	MR_HTTP1_MALFORMED = -2   /* a line that starts with CR is not "CR LF" */
};
/* The trace headers a request's head is searched for, in the order
 * net/protocols/trace_context.lua prefers them. */
enum {
	MR_HTTP1_SW8 = 0,
	MR_HTTP1_TRACEPARENT = 1,
	MR_HTTP1_B3 = 2,
	MR_HTTP1_X_B3_TRACEID = 3,
	MR_HTTP1_TRACES = 4
};
struct mr_http1_head {
	int64_t length;   /* Content-Length: -1 none, -2 not 1 to 15 digits, or two that differ */
	int32_t end;      /* the index after the blank line, or MR_HTTP1_INCOMPLETE / _MALFORMED */
	int32_t line_end; /* the start line's LF; -1 when not in p[0..n) */
	int32_t coding;   /* the last Transfer-Encoding: 0 none, 1 its last coding is chunked, 2 other */
	int32_t host;     /* the last Host value (requests): its start, -1 when none */
	int32_t host_end; /* and its end */
	int32_t trace[4]; /* each trace header's first value (requests): its start, -1 when none */
	int32_t trace_end[4];
	int32_t trace_next[4]; /* the index of the line after that header */
};
/* Scans the head whose start line's rest begins at p[from] (a request's
 * target, a response's status code) with n bytes visible at p: the line ends
 * up to the blank line, and the headers a request (is_request != 0) or a
 * response is read for, in the lines that end before n. Values are without
 * the line's CR and the blanks (SP, HT) around them. */
void mr_http1_scan_head(const uint8_t *p, int32_t from, int32_t n, int32_t is_request,
			struct mr_http1_head *h);
/* The next header line named trace (MR_HTTP1_SW8...) from the line that
 * starts at p[from] up to the blank line: sets h->trace[trace] (-1 when there
 * is none), its trace_end and trace_next, and returns h->trace[trace]. */
int32_t mr_http1_scan_next(const uint8_t *p, int32_t from, int32_t n, int32_t trace, struct mr_http1_head *h);
/* The index of the first LF in p[from..n), or n. */
int32_t mr_http1_scan_line_end(const uint8_t *p, int32_t from, int32_t n);

/* ---------------------------------------------------------------- protocol */

/* protoc's descriptor set of proto/skywalking (the SkyWalking v3 messages),
 * which lua/moonrover/lib/protobuf.lua reads to encode and decode them. */
const void *mr_skywalking_descriptors(size_t *len);

#ifndef MR_FFI_CDEF
#pragma GCC visibility pop
#endif

#endif
