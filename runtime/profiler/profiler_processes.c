/* profiler_processes.c - the processes the profiler knows: the kernel's
 * notices of a process's first sample (name it, capture its mappings) and of
 * its exit, forgetting an exited process once its samples are drained, so a
 * long run under process churn holds only what it still needs, and changes
 * to the set of pids a running profiler samples. */
#include <errno.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "api_test.h"
#include "base/grow_array.h"
#include "base/log.h"
#include "base/pid_table.h"
#include "profiler/profiler_internal.h"
#include "unwind/unwinder.h"
#include "profiler.skel.h"

/* A process's samples sit in one of the two count maps; a drain empties one.
 * Three drains after its exit, both have been emptied since, unless a drain
 * put stacks off (then they may still be waiting). */
#define DRAINS_TO_FORGET 3

static void drop_exited(struct mr_profiler *p, int32_t pid)
{
	for (size_t i = 0; i < p->nexited; i++) {
		if (p->exited[i].pid == pid) {
			p->exited[i] = p->exited[--p->nexited];
			return;
		}
	}
}

static void note_new(struct mr_profiler *p, const struct mr_notice *n)
{
	int added;
	char *comm = mr_pid_table_put(p->comms, n->pid, &added);

	if (!comm)
		return;
	p->processes_seen += added;
	memcpy(comm, n->comm, MR_COMM_LEN);
	comm[MR_COMM_LEN] = '\0';
	/* The pid is in use again: an earlier exit of it is old news. */
	drop_exited(p, n->pid);
	/* A process that is already gone keeps whatever was captured before. */
	mr_symbolizer_track(p->sym, n->pid, NULL, 0);
	if (p->unwind)
		mr_unwinder_track(p->unwind, n->pid);
}

static void note_exit(struct mr_profiler *p, int32_t pid)
{
	struct mr_exited_process *grown = mr_grow_array(p->exited, &p->exited_cap, p->nexited + 1,
							sizeof(*p->exited));

	if (p->unwind)
		mr_unwinder_forget(p->unwind, pid);
	if (!grown)
		return; /* kept until the end: memory, not samples, is what is lost */
	p->exited = grown;
	p->exited[p->nexited++] = (struct mr_exited_process){ .pid = pid, .drain = p->drains };
}

/* The process maps more than when it was first read (a library loaded
 * since): both the unwinder and the symbolizer read its mappings again,
 * unless it is exiting, when they are gone and what was read must stay. */
static void note_maps(struct mr_profiler *p, int32_t pid)
{
	if (!p->unwind || mr_unwinder_refresh(p->unwind, pid) != 0)
		return;
	mr_symbolizer_track(p->sym, pid, NULL, 0);
}

int mr_profiler_handle_notice(void *ctx, void *data, size_t size)
{
	struct mr_profiler *p = ctx;
	const struct mr_notice *n = data;

	if (size < sizeof(*n))
		return 0;
	if (n->kind == MR_NOTICE_NEW)
		note_new(p, n);
	else if (n->kind == MR_NOTICE_EXIT)
		note_exit(p, n->pid);
	else if (n->kind == MR_NOTICE_MAPS)
		note_maps(p, n->pid);
	else if (n->kind == MR_NOTICE_TABLE && p->unwind)
		(void)mr_unwinder_load(p->unwind, n->pid, n->addr); /* unreadable: frame pointers there */
	return 0;
}

void mr_profiler_forget_exited(struct mr_profiler *p)
{
	size_t i = 0;

	if (p->drains - p->last_deferral < DRAINS_TO_FORGET && p->deferred)
		return;
	while (i < p->nexited) {
		if (p->drains - p->exited[i].drain < DRAINS_TO_FORGET) {
			i++;
			continue;
		}
		mr_symbolizer_forget(p->sym, p->exited[i].pid);
		mr_pid_table_remove(p->comms, p->exited[i].pid);
		mr_profiler_forget_threads(p, p->exited[i].pid);
		p->exited[i] = p->exited[--p->nexited];
	}
}

int mr_profiler_target(mr_profiler *p, int32_t pid, int32_t add, char *err, size_t errlen)
{
	int fd;
	__u8 one = 1;

	if (!p->opts.npids)
		return mr_error(err, errlen, -EINVAL,
				"this profiler profiles every process: no set of pids to change");
	fd = bpf_map__fd(p->skel->maps.targets);
	if (add && bpf_map_update_elem(fd, &pid, &one, BPF_ANY) != 0)
		return mr_error(err, errlen, -errno, "cannot add pid %d to the profile: %s", pid,
				strerror(errno));
	/* Its mappings now, its tables as samples need them (not all at once on
	 * the caller's thread: an agent adds pids while it serves). */
	if (add && p->unwind)
		(void)mr_unwinder_track(p->unwind, pid);
	if (!add && bpf_map_delete_elem(fd, &pid) != 0 && errno != ENOENT)
		return mr_error(err, errlen, -errno, "cannot remove pid %d from the profile: %s", pid,
				strerror(errno));
	return 0;
}
