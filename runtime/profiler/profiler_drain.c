/* profiler_drain.c - moves the kernel's counts into an mr_profile. The BPF
 * programs count into one of two maps; the drain flips them, lets programs
 * still writing to the old one finish, then reads, symbolizes and clears it,
 * so no count is lost between drains. Parsing new ELF files is the costly
 * part of naming: a drain parses at most PARSES_PER_DRAIN of them, and a
 * stack that needs more stays in its map, still counting, for the drain that
 * next empties that map. The last drain (after stop) takes both maps whole. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "api_test.h"
#include "base/grow_array.h"
#include "base/pid_table.h"
#include "proc/proc_files.h"
#include "profiler/profiler_internal.h"
#include "profiler.skel.h"

/* Longer than any program run: they are short and do not sleep. */
#define FLIP_GRACE_MS 2
/* A large binary (libpython, a browser) parses in tens of milliseconds. */
#define PARSES_PER_DRAIN 16
#define MAX_FRAMES (2 * MR_MAX_STACK_DEPTH)

struct drain {
	struct mr_profiler *p;
	mr_profile *prof;
	int stacks_fd;
	int stacks_spill_fd;
	uint32_t frames[MAX_FRAMES];
	uint32_t depth;
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Turns a resolved address into a profile frame: a symbol, else
 * "module+0xoffset", never a bare address. */
static int add_frame(struct drain *d, const struct mr_symbol *s, uint32_t *id)
{
	struct mr_frame f = { .address = s->offset, .kind = s->kind, .resolved = s->name != NULL };
	char label[512];
	const char *name = s->name;
	int rc;

	if (!name) {
		if (s->module)
			snprintf(label, sizeof(label), "%s+0x%llx", base_name(s->module),
				 (unsigned long long)s->offset);
		else
			snprintf(label, sizeof(label), "[unknown]");
		name = label;
	}
	rc = mr_profile_string_add(d->prof, name, &f.name, NULL, 0);
	if (rc == 0 && s->module)
		rc = mr_profile_module_add(d->prof, s->module, s->build_id ? s->build_id : "",
					   (int32_t)s->executable, &f.module, NULL, 0);
	return rc ? rc : mr_profile_frame_add(d->prof, &f, id, NULL, 0);
}

/* An off-CPU stack is taken inside the tracepoint that runs the program:
 * its first frames are the tracing machinery (BPF program and trampolines,
 * the tracepoint's iterator), whose names vary with the kernel but keep
 * these prefixes. They say nothing about where the thread blocked. */
static int is_tracing_frame(const struct mr_symbol *s)
{
	static const char *const prefixes[] = { "bpf_",        "__bpf_",   "__traceiter_", "trace_call_bpf",
						"perf_trace_", "__trace_", "__probestub_" };

	for (size_t i = 0; s->name && i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(s->name, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

static int resolve(struct drain *d, __u64 ip, int32_t pid, int kernel, uint32_t flags, struct mr_symbol *sym)
{
	int rc = kernel ? mr_symbolizer_resolve_kernel(d->p->sym, ip, flags, sym, NULL, 0)
			: mr_symbolizer_resolve(d->p->sym, pid, ip, flags, sym, NULL, 0);

	if (rc != 0 && rc != -EFAULT && rc != -EAGAIN) {
		memset(sym, 0, sizeof(*sym));
		sym->kind = MR_FRAME_UNKNOWN;
		rc = 0;
	}
	return rc;
}

/* Appends the frames of one stored stack, leaf first. Every frame above the
 * leaf holds a return address, named by the call before it. A user frame
 * outside the process's executable mappings is a junk return address from a
 * frame-pointer walk through code without frame pointers: the stack ends
 * there (counted in truncated_stacks). An address that cannot be resolved
 * otherwise still gets a frame ("[unknown]" or module+offset). */
static int add_stack(struct drain *d, __u64 hash, int32_t pid, int kernel)
{
	struct mr_stack_trace st;
	struct mr_symbol sym;
	int leading = kernel && d->p->opts.off_cpu, rc = 0;

	if (!hash || (bpf_map_lookup_elem(d->stacks_fd, &hash, &st) != 0 &&
		      bpf_map_lookup_elem(d->stacks_spill_fd, &hash, &st) != 0))
		return 0;
	for (int i = 0; rc == 0 && i < MR_MAX_STACK_DEPTH && st.ips[i] && d->depth < MAX_FRAMES; i++) {
		rc = resolve(d, st.ips[i], pid, kernel, i > 0 ? MR_SYMBOL_RETURN_ADDRESS : 0, &sym);
		if (rc == -EAGAIN)
			return rc;
		if (rc == -EFAULT) {
			d->p->truncated_stacks++;
			return 0;
		}
		if (leading && is_tracing_frame(&sym))
			continue;
		leading = 0;
		rc = add_frame(d, &sym, &d->frames[d->depth++]);
	}
	return rc;
}

static const char *comm_of(struct drain *d, int32_t pid, char *buf, size_t len)
{
	const char *name = mr_pid_table_get(d->p->comms, pid);

	if (name)
		return name;
	if (mr_proc_comm(pid, buf, len) > 0)
		return buf;
	snprintf(buf, len, "[pid %d]", pid);
	return buf;
}

/* Leaf first: the kernel part (when kept) sits below the user part. */
static int add_sample(struct drain *d, const struct mr_stack_key *k, const struct mr_stack_value *v)
{
	char comm[32];
	struct mr_sample_thread thread = { .tid = k->tid };
	uint64_t nanos = d->p->opts.off_cpu ? v->nanos : v->count * (1000000000ull / d->p->opts.frequency);
	int rc = 0;

	d->depth = 0;
	if (d->p->opts.kernel)
		rc = add_stack(d, k->kernel_stack, k->pid, 1);
	if (rc == 0)
		rc = add_stack(d, k->user_stack, k->pid, 0);
	if (rc == -EAGAIN)
		d->p->deferred++;
	if (rc != 0)
		return rc;
	d->p->stacks_drained++;
	thread.name = k->tid ? mr_profiler_thread_name(d->p, k->pid, k->tid) : "";
	return mr_profile_thread_sample_add(d->prof, k->pid, comm_of(d, k->pid, comm, sizeof(comm)), &thread,
					    d->frames, d->depth, v->count, nanos, NULL, 0);
}

/* Collects the keys first: deleting while walking restarts the walk. */
static int collect_keys(int fd, struct mr_stack_key **keys, size_t *n)
{
	struct mr_stack_key key, *prev = NULL, *grown;
	size_t cap = 0;

	*keys = NULL;
	*n = 0;
	while (bpf_map_get_next_key(fd, prev, &key) == 0) {
		grown = mr_grow_array(*keys, &cap, *n + 1, sizeof(key));
		if (!grown)
			return -ENOMEM;
		*keys = grown;
		(*keys)[(*n)++] = key;
		prev = &(*keys)[*n - 1];
	}
	return 0;
}

/* Reads the entries of the idle map into the profile and deletes them,
 * except those put off (left for a later drain). An entry that cannot be
 * deleted is counted once more at the next drain of this map: that is
 * reported rather than hidden. */
static int drain_map(struct drain *d, int fd)
{
	struct mr_stack_key *keys;
	struct mr_stack_value v;
	size_t n, undeleted = 0;
	int rc = collect_keys(fd, &keys, &n);

	for (size_t i = 0; i < n && rc == 0; i++) {
		if (bpf_map_lookup_elem(fd, &keys[i], &v) != 0)
			continue;
		rc = add_sample(d, &keys[i], &v);
		if (rc == -EAGAIN) {
			d->p->last_deferral = d->p->drains;
			rc = 0;
		} else if (rc == 0) {
			undeleted += bpf_map_delete_elem(fd, &keys[i]) != 0;
		}
	}
	free(keys);
	return rc ? rc : (undeleted ? -EIO : 0);
}

/* Drains one generation: its count map and its spill map. */
static int drain_generation(struct drain *d, __u32 gen)
{
	struct profiler_bpf *s = d->p->skel;
	int rc = drain_map(d, bpf_map__fd(gen ? s->maps.counts1 : s->maps.counts0));
	int spill_rc = drain_map(d, bpf_map__fd(gen ? s->maps.counts_spill1 : s->maps.counts_spill0));

	return rc ? rc : spill_rc;
}

/* A drain of p into prof, or NULL. */
static struct drain *drain_new(struct mr_profiler *p, mr_profile *prof)
{
	struct drain *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->p = p;
	d->prof = prof;
	d->stacks_fd = bpf_map__fd(p->skel->maps.stacks);
	d->stacks_spill_fd = bpf_map__fd(p->skel->maps.stacks_spill);
	return d;
}

int mr_profiler_drain(mr_profiler *p, mr_profile *prof, char *err, size_t errlen)
{
	struct drain *d = drain_new(p, prof);
	__u32 idle;
	int rc, later_rc;

	if (!d) {
		snprintf(err, errlen, "cannot read the kernel's counts: out of memory");
		return -ENOMEM;
	}
	/* Capture the mappings of processes announced since the last poll. */
	if (p->notices)
		ring_buffer__consume(p->notices);
	idle = p->skel->bss->active;
	__atomic_store_n(&p->skel->bss->active, !idle, __ATOMIC_SEQ_CST);
	mr_sys_sleep_ms(FLIP_GRACE_MS);
	mr_symbolizer_limit_parses(p->sym, p->stopped ? -1 : PARSES_PER_DRAIN);
	rc = drain_generation(d, idle);
	if (p->stopped) {
		later_rc = drain_generation(d, !idle); /* what earlier drains put off */
		rc = rc ? rc : later_rc;
	}
	free(d);
	p->drains++;
	mr_profiler_forget_exited(p);
	if (rc == -EIO)
		snprintf(err, errlen, "the kernel's counts were read, but some could not be cleared: %s",
			 "they will be counted again");
	else if (rc)
		snprintf(err, errlen, "cannot read the kernel's counts into the profile: %s", strerror(-rc));
	return rc;
}
