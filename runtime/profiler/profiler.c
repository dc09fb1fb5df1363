/* profiler.c - the on-CPU / off-CPU profiler: loads profiler.bpf.c, attaches
 * it (cpu-clock sampling or sched_switch, and the process notices handled in
 * profiler_processes.c), and drains the kernel's counts into an mr_profile
 * (see profiler_drain.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "api_test.h"
#include "base/log.h"
#include "kernel/bpf_errors.h"
#include "kernel/btf.h"
#include "profiler/cpu_clock.h"
#include "base/pid_table.h"
#include "profiler/profiler_internal.h"
#include "script_host/script_owner.h"
#include "unwind/unwinder.h"
#include "profiler.skel.h"

#define DEFAULT_MAX_STACKS 65536
#define DEFAULT_UNWIND_TABLE_BYTES (256ull << 20)

static int fill_targets(struct mr_profiler *p, const struct mr_profiler_opts *o, char *err, size_t errlen)
{
	int fd = bpf_map__fd(p->skel->maps.targets);
	__u8 one = 1;

	for (uint32_t i = 0; i < o->npids; i++) {
		__s32 pid = o->pids[i];

		if (bpf_map_update_elem(fd, &pid, &one, BPF_ANY) != 0) {
			snprintf(err, errlen, "cannot add pid %d to the profile: %s", pid, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static int configure(struct mr_profiler *p, const struct mr_profiler_opts *o)
{
	uint32_t max = o->max_stacks ? o->max_stacks : DEFAULT_MAX_STACKS;
	struct profiler_bpf *s = p->skel;
	int err;

	s->rodata->filter_pids = o->npids > 0;
	s->rodata->kernel_stacks = o->kernel != 0;
	s->rodata->cfi_unwind = o->unwind == MR_UNWIND_MODE_CFI;
	s->rodata->per_thread = o->per_thread != 0;
	s->rodata->exclude_tgid = o->npids ? 0 : (__u32)getpid();
	err = bpf_map__set_max_entries(s->maps.stacks, max);
	err = err ?: bpf_map__set_max_entries(s->maps.counts0, max);
	err = err ?: bpf_map__set_max_entries(s->maps.counts1, max);
	/* The blocked-thread map is preallocated: keep it tiny when unused. */
	err = err ?: (o->off_cpu ? 0 : bpf_map__set_max_entries(s->maps.blocked, 1));
	err = err ?: bpf_program__set_autoload(s->progs.on_cpu_sample, !o->off_cpu);
	err = err ?: bpf_program__set_autoload(s->progs.off_cpu_switch, o->off_cpu != 0);
	return err;
}

static int open_and_load(struct mr_profiler *p, const struct mr_profiler_opts *o, char *err, size_t errlen)
{
	int e;

	p->skel = profiler_bpf__open();
	if (!p->skel) {
		e = -errno;
		snprintf(err, errlen, "cannot open the profiler's BPF object: %s", strerror(-e));
		return e;
	}
	e = configure(p, o);
	if (e == 0)
		e = profiler_bpf__load(p->skel);
	if (e != 0)
		snprintf(err, errlen, "cannot load the profiler's BPF programs: %s (%s)", strerror(-e),
			 mr_kernel_bpf_hint(e));
	return e;
}

/* Loads the programs; a kernel that refuses the CFI walker (no bpf_loop,
 * a stricter verifier) gets the frame-pointer programs instead, said once
 * in the log and in the profile's figures (unwind_mode). */
static int load_programs(struct mr_profiler *p, char *err, size_t errlen)
{
	int e = open_and_load(p, &p->opts, err, errlen);

	if (e == 0 || p->opts.unwind != MR_UNWIND_MODE_CFI || e == -EPERM || e == -EACCES)
		return e;
	mr_log(MR_LEVEL_WARN, "profiler",
	       "the kernel refused the CFI unwinder (%s): user stacks by frame pointers", err);
	profiler_bpf__destroy(p->skel);
	p->skel = NULL;
	p->opts.unwind = MR_UNWIND_MODE_FP;
	return open_and_load(p, &p->opts, err, errlen);
}

static int load(struct mr_profiler *p, const struct mr_profiler_opts *o, char *err, size_t errlen)
{
	int e = load_programs(p, err, errlen);

	if (e == 0)
		e = fill_targets(p, o, err, errlen);
	if (e == 0 && p->opts.unwind == MR_UNWIND_MODE_CFI) {
		p->unwind = mr_unwinder_new(bpf_map__fd(p->skel->maps.unwind_tables),
					    bpf_map__fd(p->skel->maps.unwind_processes),
					    o->unwind_table_bytes ? o->unwind_table_bytes
								  : DEFAULT_UNWIND_TABLE_BYTES);
		if (!p->unwind)
			e = mr_error(err, errlen, -ENOMEM, "cannot set up the CFI unwinder: out of memory");
		/* The processes named up front are unwound by table from their
		 * first sample; one that cannot be read now gets its tables at
		 * its first sample's notice, as any other process. */
		for (uint32_t i = 0; e == 0 && i < o->npids; i++)
			(void)mr_unwinder_prepare(p->unwind, o->pids[i]);
	}
	return e;
}

mr_profiler *mr_profiler_open(const struct mr_profiler_opts *o, char *err, size_t errlen)
{
	struct mr_profiler *p;

	if (!o || (o->npids && !o->pids) || (!o->off_cpu && (o->frequency == 0 || o->frequency > 100000)) ||
	    (o->unwind != MR_UNWIND_MODE_FP && o->unwind != MR_UNWIND_MODE_CFI)) {
		snprintf(err, errlen,
			 "invalid profiler options (frequency must be 1..100000 Hz, unwind fp or cfi)");
		return NULL;
	}
	mr_kernel_bpf_log_setup();
	if (mr_kernel_btf_check(err, errlen) != 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->opts = *o;
	p->opts.pids = NULL;
	p->comms = mr_pid_table_new(MR_COMM_LEN + 1);
	p->sym = mr_symbolizer_new(o->kernel, err, errlen);
	if (!p->comms || !p->sym || (o->per_thread && mr_profiler_threads_init(p) != 0)) {
		if (p->sym)
			snprintf(err, errlen, "out of memory");
		mr_profiler_close(p);
		return NULL;
	}
	if (load(p, o, err, errlen) != 0) {
		mr_profiler_close(p);
		return NULL;
	}
	mr_script_owner_add(p, (mr_script_owner_close_fn)mr_profiler_close);
	return p;
}

static int attach_notices(struct mr_profiler *p, char *err, size_t errlen)
{
	int e;

	p->notices = ring_buffer__new(bpf_map__fd(p->skel->maps.notices), mr_profiler_handle_notice, p, NULL);
	if (!p->notices) {
		e = -errno;
		snprintf(err, errlen, "cannot open the process-notice ring buffer: %s", strerror(-e));
		return e;
	}
	p->exec_link = bpf_program__attach(p->skel->progs.on_exec);
	p->exit_link = p->exec_link ? bpf_program__attach(p->skel->progs.on_exit) : NULL;
	if (!p->exit_link) {
		e = -errno;
		snprintf(err, errlen, "cannot attach to the sched_process_exec/exit tracepoints: %s (%s)",
			 strerror(-e), mr_kernel_bpf_hint(e));
		return e;
	}
	return 0;
}

static int attach_sampling(struct mr_profiler *p, char *err, size_t errlen)
{
	int e;

	if (!p->opts.off_cpu) {
		p->sampling = mr_profiler_cpu_clock_attach(p->skel->progs.on_cpu_sample, p->opts.frequency,
							   err, errlen);
		return p->sampling ? 0 : -errno;
	}
	p->switch_link = bpf_program__attach(p->skel->progs.off_cpu_switch);
	if (!p->switch_link) {
		e = -errno;
		snprintf(err, errlen, "cannot attach to tp_btf/sched_switch: %s (%s)", strerror(-e),
			 mr_kernel_bpf_hint(e));
		return e;
	}
	return 0;
}

int mr_profiler_start(mr_profiler *p, char *err, size_t errlen)
{
	int e;

	if (p->started) {
		snprintf(err, errlen, "the profiler is already started");
		return -EALREADY;
	}
	e = attach_notices(p, err, errlen);
	if (e == 0)
		e = attach_sampling(p, err, errlen);
	if (e != 0) {
		mr_profiler_stop(p);
		ring_buffer__free(p->notices);
		p->notices = NULL;
		return e;
	}
	p->started = 1;
	p->start_ns = mr_sys_monotonic_ns();
	if (p->opts.duration_ns)
		__atomic_store_n(&p->skel->bss->stop_ns, p->start_ns + p->opts.duration_ns, __ATOMIC_RELAXED);
	return 0;
}

int mr_profiler_poll(mr_profiler *p, int32_t timeout_ms, char *err, size_t errlen)
{
	int n;

	if (!p->notices)
		n = timeout_ms > 0 ? mr_sys_sleep_ms(timeout_ms) : 0;
	else
		n = ring_buffer__poll(p->notices, timeout_ms);
	if (n == -EINTR)
		return 0; /* the caller looks at the signal itself */
	if (n < 0)
		return mr_error(err, errlen, n, "waiting for the kernel's process notices: %s", strerror(-n));
	return n;
}

void mr_profiler_stop(mr_profiler *p)
{
	p->stopped = p->started;
	mr_profiler_cpu_clock_detach(p->sampling);
	p->sampling = NULL;
	bpf_link__destroy(p->switch_link);
	p->switch_link = NULL;
	bpf_link__destroy(p->exec_link);
	p->exec_link = NULL;
	bpf_link__destroy(p->exit_link);
	p->exit_link = NULL;
}

void mr_profiler_stats(const mr_profiler *p, struct mr_profiler_stats *out)
{
	const struct mr_profiler_counters *c = &p->skel->bss->counters;

	memset(out, 0, sizeof(*out));
	out->samples = c->samples;
	out->idle_samples = c->idle_samples;
	out->lost_user_stack = c->lost_user_stack;
	out->lost_stack_full = c->lost_stack_full;
	out->lost_stack_nomem = c->lost_stack_nomem;
	out->lost_counts_full = c->lost_counts_full;
	out->lost_counts_nomem = c->lost_counts_nomem;
	out->lost_notify = c->lost_notify;
	out->lost_offcpu_start = c->lost_offcpu_start;
	out->first_sample_ns = c->first_sample_ns;
	out->processes = p->processes_seen;
	out->tracked = mr_pid_table_count(p->comms);
	out->stacks = p->stacks_drained;
	out->deferred = p->deferred;
	out->truncated_stacks = p->truncated_stacks;
	out->start_ns = p->start_ns;
	out->unwind_cfi_stacks = c->unwind_cfi_stacks;
	out->unwind_fp_stacks = c->unwind_fp_stacks;
	out->unwind_fp_frames = c->unwind_fp_frames;
	out->unwind_truncated = c->unwind_truncated;
	out->unwind_mode = p->opts.unwind;
}

void mr_profiler_unwind_stats(const mr_profiler *p, struct mr_unwind_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (p->unwind)
		mr_unwinder_stats(p->unwind, out);
}

void mr_profiler_close(mr_profiler *p)
{
	if (!p)
		return;
	mr_script_owner_remove(p);
	mr_profiler_stop(p);
	ring_buffer__free(p->notices);
	mr_unwinder_free(p->unwind);
	profiler_bpf__destroy(p->skel);
	mr_symbolizer_free(p->sym);
	mr_pid_table_free(p->comms);
	mr_profiler_threads_free(p);
	free(p->exited);
	free(p);
}
