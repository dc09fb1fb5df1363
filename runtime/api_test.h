/* api_test.h - the part of the runtime that only specs and benchmarks call:
 * the pieces the bundled Lua reaches through higher-level calls (the
 * symbolizer through the profiler, the data plane and the metrics registry
 * through the agent) opened up to be tested one by one.
 *
 * Preprocessed like api.h (whose conventions hold here too) into the text
 * that lua/moonrover/rt.lua hands to ffi.cdef after api.h's, for rt.with_test_api(). */
#ifndef MR_API_TEST_H
#define MR_API_TEST_H

#ifndef MR_FFI_CDEF
#include "api.h"
#pragma GCC visibility push(default)
#endif

/* ---------------------------------------------------------------- system */

int mr_sys_sleep_ms(int32_t ms);

/* --------------------------------------------------------------- pid file */

/* The agent's pid file (runtime/files/pid_file.h): created with this
 * process's pid and held locked until released. NULL, with why, when the
 * path is unsafe (a link; a directory others can write) or another process
 * holds it (named in the message). */
typedef struct mr_pid_file mr_pid_file;

mr_pid_file *mr_pid_file_acquire(const char *path, char *err, size_t errlen);
/* Removes the file if it is still the one acquired, and unlocks it. */
void mr_pid_file_release(mr_pid_file *pf);
/* The pid that the file at path names, when that process holds the file's
 * lock; else a negative errno and why (no file, a stale one, a pid that is
 * not its holder). */
int32_t mr_pid_file_holder(const char *path, char *err, size_t errlen);

/* ------------------------------------------------------- agent status file */

/* How the agent's last (re)load went, as its status file says it
 * (runtime/agent/agent_status.h): the file beside the pid file that
 * `moonrover reload` waits on. */
enum mr_agent_result {
	MR_AGENT_RESULT_OK = 0,
	MR_AGENT_RESULT_REFUSED = 1, /* a reload refused: the previous scripts run */
	MR_AGENT_RESULT_FAILED = 2   /* the first start: a script did not start */
};
struct mr_agent_status {
	int32_t pid;       /* the agent that wrote it */
	uint64_t began_ns; /* CLOCK_MONOTONIC when that (re)load began reading the scripts */
	int64_t reload;    /* reloads it had tried (0: its first start) */
	uint32_t result;   /* enum mr_agent_result */
	char detail[1024]; /* what it did, or why it refused */
};

/* Writes st into the status file of pid_file (pid_file with ".status"
 * added), whole or not at all. 0, or a negative errno and why. */
int mr_agent_status_write(const char *pid_file, const struct mr_agent_status *st, char *err, size_t errlen);
/* Reads it: 0, or a negative errno and why (-ENOENT: there is none yet;
 * -EINVAL: not a whole status file). */
int mr_agent_status_read(const char *pid_file, struct mr_agent_status *out, char *err, size_t errlen);
/* Removes it; 0 also when there is none, else a negative errno and why. */
int mr_agent_status_remove(const char *pid_file, char *err, size_t errlen);
/* 1 when st is the answer of agent pid to a reload asked at asked_ns
 * (CLOCK_MONOTONIC): a (re)load it began then or later, so one that read
 * the scripts after the asker's edits. 0 otherwise. */
int mr_agent_status_answers(const struct mr_agent_status *st, int32_t pid, uint64_t asked_ns);

/* ------------------------------------------------------------ output files */

/* Sends every later mr_output_open down one path of runtime/files/, for
 * specs: NAMED as where unnamed files are not supported (a temporary name
 * renamed at commit), COPY as where an unnamed file cannot be linked (no
 * /proc: its bytes copied into place), NORMAL back to what the system allows. */
enum { MR_TEST_OUTPUT_NORMAL = 0, MR_TEST_OUTPUT_NAMED = 1, MR_TEST_OUTPUT_COPY = 2 };
void mr_test_output_fallback(int32_t which);

/* ------------------------------------------------------------ profile data */

/* The _add functions intern their argument (NULL counts as "") and store its
 * id in *id. */
int mr_profile_string_add(mr_profile *p, const char *s, uint32_t *id, char *err, size_t errlen);
/* executable (0 or 1) marks the module as some sampled process's executable;
 * it is not part of the module's identity and, once set, stays set. */
int mr_profile_module_add(mr_profile *p, const char *path, const char *build_id, int32_t executable,
			  uint32_t *id, char *err, size_t errlen);
int mr_profile_frame_add(mr_profile *p, const struct mr_frame *f, uint32_t *id, char *err, size_t errlen);
/* Adds count/nanos to the sample with this pid, comm and stack (frame ids,
 * leaf first), creating it when new. */
int mr_profile_sample_add(mr_profile *p, int32_t pid, const char *comm, const uint32_t *frames,
			  uint32_t depth, uint64_t count, uint64_t nanos, char *err, size_t errlen);
/* The thread of a sample of a per-thread profile (tid 0: the whole process). */
struct mr_sample_thread {
	int32_t tid;
	uint32_t pad;
	const char *name; /* the thread's name (NULL counts as "") */
};
/* mr_profile_sample_add for one thread: the samples of different threads
 * (tid and name) of a process stay apart. */
int mr_profile_thread_sample_add(mr_profile *p, int32_t pid, const char *comm,
				 const struct mr_sample_thread *thread, const uint32_t *frames,
				 uint32_t depth, uint64_t count, uint64_t nanos, char *err, size_t errlen);
uint32_t mr_profile_frame_count(const mr_profile *p);
uint32_t mr_profile_module_count(const mr_profile *p);
const struct mr_module *mr_profile_modules(const mr_profile *p);

/* ---------------------------------------------------------- unwind tables */

#include "unwind.h"

/* The compact unwind table of one ELF file (runtime/unwind/unwind_table.h):
 * rows from its .eh_frame, as the profiler loads them for BPF. */
typedef struct mr_unwind_table mr_unwind_table;

struct mr_unwind_table_stats {
	uint64_t fdes;          /* functions with CFI */
	uint64_t rows;          /* rows after merging equal neighbours */
	uint64_t fallback_rows; /* rows walked by frame pointer (no CFI, or unsupported rules) */
	uint64_t unsupported;   /* CFI rows whose rules the compact form cannot hold */
	uint64_t bytes;         /* size of the rows */
};

/* NULL, with why, when path cannot be read or has no usable .eh_frame. */
mr_unwind_table *mr_unwind_table_open(const char *path, char *err, size_t errlen);
/* The row covering vaddr (an address in the file's own virtual addresses);
 * -ENOENT before the first row. */
int mr_unwind_table_lookup(const mr_unwind_table *t, uint64_t vaddr, struct mr_unwind_row *out);
void mr_unwind_table_stats(const mr_unwind_table *t, struct mr_unwind_table_stats *out);
void mr_unwind_table_free(mr_unwind_table *t);

/* -------------------------------------------------------------- symbolizer */

typedef struct mr_symbolizer mr_symbolizer;

/* The module name of kernel frames, as perf names it. */
#define MR_KERNEL_MODULE "[kernel.kallsyms]"

struct mr_symbol {
	const char *name;     /* demangled function name, NULL when unresolved */
	const char *module;   /* path of the file, or "[kernel.kallsyms]", NULL when unknown */
	const char *build_id; /* hex build-id or "" */
	uint64_t offset;      /* file offset within module (user) or the address (kernel) */
	uint32_t kind;        /* enum mr_frame_kind */
	uint32_t executable;  /* 1 when module is the process's executable */
};

struct mr_symbolizer_stats {
	uint64_t files_parsed;    /* ELF files whose symbols were loaded */
	uint64_t file_cache_hits; /* lookups answered by an already parsed file */
	uint64_t processes;       /* processes whose mappings are known */
	uint64_t maps_reads;      /* reads of /proc/PID/maps */
	uint64_t roots;           /* root directories held open for tracked processes */
	uint64_t unresolved;      /* addresses left without a symbol */
	uint64_t not_code;        /* addresses of known processes outside their executable mappings */
};

enum mr_symbol_flags {
	/* addr is a return address (a frame above the leaf): name the function
	 * holding the call, at addr - 1, as the address may already be in the
	 * next function when the call never returns */
	MR_SYMBOL_RETURN_ADDRESS = 1
};

mr_symbolizer *mr_symbolizer_new(int32_t kernel, char *err, size_t errlen);
void mr_symbolizer_free(mr_symbolizer *s);
/* Reads the mappings of pid now and holds its root directory, so that its
 * addresses resolve after it exits; the mapped files are opened and parsed
 * when an address in them is first resolved. */
int mr_symbolizer_track(mr_symbolizer *s, int32_t pid, char *err, size_t errlen);
void mr_symbolizer_forget(mr_symbolizer *s, int32_t pid);
/* Resolves one address (flags: enum mr_symbol_flags); out's strings live as
 * long as the symbolizer. An address that has no name still fills out
 * (module and offset when known). -EFAULT when the process is known but addr
 * is in none of its executable mappings: not code, a junk frame. -EAGAIN
 * when naming it needs a parse the limit forbids (mr_symbolizer_limit_parses). */
int mr_symbolizer_resolve(mr_symbolizer *s, int32_t pid, uint64_t addr, uint32_t flags, struct mr_symbol *out,
			  char *err, size_t errlen);
int mr_symbolizer_resolve_kernel(mr_symbolizer *s, uint64_t addr, uint32_t flags, struct mr_symbol *out,
				 char *err, size_t errlen);
/* Resolves a file offset of an ELF file directly. */
int mr_symbolizer_resolve_file(mr_symbolizer *s, const char *path, uint64_t file_offset,
			       struct mr_symbol *out, char *err, size_t errlen);
void mr_symbolizer_stats(const mr_symbolizer *s, struct mr_symbolizer_stats *out);
/* Lets the next resolutions parse at most files more ELF files (-1: no
 * limit, the default); past that, an address whose file is not parsed yet
 * gets -EAGAIN, so a caller can spread the work and ask again later. */
void mr_symbolizer_limit_parses(mr_symbolizer *s, int64_t files);

/* ------------------------------------------------------------- data plane */

#include "bench.h"

/* The benchmarks' stream: struct mr_bench_event (bpf/bench.h), one per
 * getppid() call of one process (bpf/bench.bpf.c). */
enum { MR_STREAM_BENCH = 1 };

/* A data plane (as mr_data_plane_open) that also streams bench_pid's
 * getppid() calls on MR_STREAM_BENCH. */
mr_data_plane *mr_data_plane_open_bench(const struct mr_data_plane_opts *o, int32_t bench_pid, char *err,
					size_t errlen);
/* Benchmark baseline: pops everything queued and counts events per pid in C. */
uint64_t mr_data_plane_drain_in_c(mr_data_plane *d, uint32_t stream);
/* `moonrover agent` (as mr_agent_run) with MR_STREAM_BENCH fed by
 * bench_pid's getppid() calls, for the event path's benchmark
 * (scripts/bench/agent_events.sh). */
int mr_agent_run_bench(const struct mr_agent_opts *o, int32_t bench_pid, char *err, size_t errlen);

/* ----------------------------------------------------------- script memory */

/* Runs a Lua chunk (with the standard library) in a state that allocates
 * through a script's allocator with a budget of limit bytes; wrapped: the
 * counting wrapper around LuaJIT's own allocator, as where lua_newstate
 * refuses a custom one. *held: what the allocator counted after the chunk;
 * *counted: what LuaJIT counted (collectgarbage("count")). Returns 0 when the
 * chunk ran, 1 when the budget stopped it, or -EINVAL with its error. */
int32_t mr_script_memory_try(const char *chunk, uint64_t limit, int32_t wrapped, uint64_t *held,
			     uint64_t *counted, char *err, size_t errlen);

/* ------------------------------------------------------------- kubernetes */

/* Before mr_kube_start: the changes the client's log keeps (16384 by
 * default; a trim leaves this many, fewer when their objects' text passes
 * 32 MiB) and the items a list page asks for (500), so that a spec can make
 * a cursor too old and a list of pages; 0 keeps a default. */
void mr_kube_set_limits(struct mr_kube *k, uint32_t log_changes, uint32_t page_items);

/* ----------------------------------------------------------------- metrics */

/* A registry of counters, gauges and histograms exported in Prometheus text
 * format. Series are named by metric name plus an optional label set written
 * as Prometheus labels ("script=\"x\",stream=\"y\""). */
typedef struct mr_metrics mr_metrics;

mr_metrics *mr_metrics_new(char *err, size_t errlen);
void mr_metrics_free(mr_metrics *m);
/* Returns the id of the series (creating it and, when new, its metric):
 * -EINVAL for a bad name or labels or a type clash with an existing metric
 * of that name, -ENOMEM. A non-empty help replaces the metric's. A
 * histogram gets the default bucket bounds, 0.0001 to 5 (seconds). */
int32_t mr_metrics_series(mr_metrics *m, uint32_t type, const char *name, const char *help,
			  const char *labels, char *err, size_t errlen);
/* The same for a histogram with its own bucket bounds: nbounds (at most
 * MR_HISTOGRAM_BOUNDS_MAX) finite numbers above 0, strictly ascending; a
 * bucket +Inf follows them. nbounds 0: the default bounds. The bounds are
 * the metric's, given when it is created: a series of the same name with
 * other bounds is refused (-EINVAL, naming both lists). */
int32_t mr_metrics_histogram(mr_metrics *m, const char *name, const char *help, const char *labels,
			     const double *bounds, uint32_t nbounds, char *err, size_t errlen);
void mr_metrics_add(mr_metrics *m, int32_t series, double v);     /* counters, gauges */
void mr_metrics_set(mr_metrics *m, int32_t series, double v);     /* gauges */
void mr_metrics_observe(mr_metrics *m, int32_t series, double v); /* histograms */
/* A duration in nanoseconds: its bucket as for ns / 1e9 seconds, summed
 * exactly (the sum shows as the decimal it is, not as a sum of fractions). */
void mr_metrics_observe_ns(mr_metrics *m, int32_t series, uint64_t ns);
double mr_metrics_value(const mr_metrics *m, int32_t series);
/* Renders every series as Prometheus text; the string stays valid until the
 * next call. *len receives its length. NULL when out of memory. */
const char *mr_metrics_render(mr_metrics *m, size_t *len);
/* A mark of what a registry holds (runtime/metrics/metrics_mark.c), and a
 * rollback to it that forgets every metric and series registered since: a
 * reload's canary registers series that must not outlive it. The ids handed
 * out after the mark must not be used again (they will name other series). */
struct mr_metrics_mark {
	size_t metrics;
	size_t series;
	size_t hists;
	size_t bounds;
	size_t counts;
};
struct mr_metrics_mark mr_metrics_mark(const mr_metrics *m);
void mr_metrics_rollback(mr_metrics *m, const struct mr_metrics_mark *mark);

/* ------------------------------------------------------------- HTTP server */

/* Serves GET /metrics (the registry) and GET /healthz (the text set by
 * mr_http_set_health, 200 when healthy, 503 when not) on a libevent base. */
typedef struct mr_http mr_http;

struct mr_http_opts {
	uint32_t max_connections; /* open at once; a new one closes another, the slowest sender first (0: 64) */
	uint32_t timeout_ms;      /* a request's whole time, from the connection's opening
				   * (or the previous answer) to its answer sent (0: 10000) */
};

/* What the endpoint did with connections, also in the registry as
 * moonrover_http_* series. */
struct mr_http_stats {
	uint32_t open;          /* connections open now */
	uint64_t accepted;      /* connections accepted */
	uint64_t evicted;       /* closed, oldest first, to make room under the cap */
	uint64_t timed_out;     /* closed at the deadline with a request unanswered */
	uint64_t accept_errors; /* accept() failures (out of descriptors): each pauses accepting */
	uint64_t log_lines;     /* lines logged about them */
};

/* Priority levels an event loop needs for the endpoint to work on its open
 * connections before it accepts new ones (event_base_priority_init); with
 * fewer, every event of the endpoint runs at the loop's one level. */
enum { MR_HTTP_PRIORITIES = 3 };

/* base is a struct event_base *. address is "host:port" (port 0: any). o
 * may be NULL (the defaults). */
mr_http *mr_http_open(void *base, const char *address, mr_metrics *m, const struct mr_http_opts *o, char *err,
		      size_t errlen);
/* The port actually bound. */
uint16_t mr_http_port(const mr_http *h);
void mr_http_stats(const mr_http *h, struct mr_http_stats *out);
void mr_http_set_health(mr_http *h, int32_t healthy, const char *text);
void mr_http_close(mr_http *h);

/* ---------------------------------------------------------- guarded buffer */

/* capacity bytes (rounded up to whole pages) between two inaccessible
 * pages: specs place a parser's input so that it ends at the end of the
 * buffer (data + capacity - n), and a read past it faults. */
typedef struct mr_guarded_buffer mr_guarded_buffer;

mr_guarded_buffer *mr_guarded_buffer_new(size_t capacity, char *err, size_t errlen);
uint8_t *mr_guarded_buffer_data(mr_guarded_buffer *b);
size_t mr_guarded_buffer_capacity(const mr_guarded_buffer *b);
void mr_guarded_buffer_free(mr_guarded_buffer *b);

/* ------------------------------------------------------------- transport */

/* Readable when results are waiting; read it (8 bytes) to rearm. */
int mr_transport_notify_fd(const mr_transport *t);

#ifndef MR_FFI_CDEF
#pragma GCC visibility pop
#endif

#endif
