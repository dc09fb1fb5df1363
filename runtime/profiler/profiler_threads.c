/* profiler_threads.c - the names of sampled threads, for per-thread profiles:
 * read from /proc/PID/task/TID/comm the first time a thread's samples are
 * drained and kept for the profiler's lifetime, so that every drain names a
 * thread alike (one that has exited since keeps the name it had). A thread
 * that exited before its first drain keeps its id but no name. The names of
 * a process's threads are forgotten with the process. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "api_test.h"
#include "base/grow_array.h"
#include "base/pid_table.h"
#include "files/file_read.h"
#include "proc/proc_root.h"
#include "profiler/profiler_internal.h"

/* What the table keeps for a thread id. */
struct thread_name {
	int32_t pid; /* the process it belongs to */
	char name[MR_COMM_LEN + 1];
};

int mr_profiler_threads_init(struct mr_profiler *p)
{
	p->threads = mr_pid_table_new(sizeof(struct thread_name));
	return p->threads ? 0 : -ENOMEM;
}

void mr_profiler_threads_free(struct mr_profiler *p)
{
	mr_pid_table_free(p->threads);
	free(p->thread_ids);
}

/* Reads the name of thread tid of pid into buf (len > 0); "" when gone. */
static void read_thread_name(int32_t pid, int32_t tid, char *buf, size_t len)
{
	char task[64], path[PATH_MAX];
	ssize_t n;

	buf[0] = '\0';
	snprintf(task, sizeof(task), "task/%d/comm", tid);
	if (mr_proc_path(path, sizeof(path), pid, task) < 0)
		return;
	n = mr_file_read_into(path, buf, len);
	if (n <= 0) {
		buf[0] = '\0';
		return;
	}
	if (buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}

/* Notes tid in the list forget_threads walks; 0 or -ENOMEM. */
static int remember_id(struct mr_profiler *p, int32_t tid)
{
	int32_t *ids = mr_grow_array(p->thread_ids, &p->thread_ids_cap, p->nthread_ids + 1, sizeof(*ids));

	if (!ids)
		return -ENOMEM;
	p->thread_ids = ids;
	ids[p->nthread_ids++] = tid;
	return 0;
}

const char *mr_profiler_thread_name(struct mr_profiler *p, int32_t pid, int32_t tid)
{
	int added = 0;
	struct thread_name *t = mr_pid_table_put(p->threads, tid, &added);

	if (!t)
		return "";
	if (added && remember_id(p, tid) != 0) {
		(void)mr_pid_table_remove(p->threads, tid);
		return "";
	}
	/* A new thread, or an id another process's thread took. */
	if (added || t->pid != pid) {
		t->pid = pid;
		read_thread_name(pid, tid, t->name, sizeof(t->name));
	}
	return t->name;
}

void mr_profiler_forget_threads(struct mr_profiler *p, int32_t pid)
{
	size_t i = 0;

	while (i < p->nthread_ids) {
		const struct thread_name *t = mr_pid_table_get(p->threads, p->thread_ids[i]);

		if (t && t->pid != pid) {
			i++;
			continue;
		}
		if (t)
			(void)mr_pid_table_remove(p->threads, p->thread_ids[i]);
		p->thread_ids[i] = p->thread_ids[--p->nthread_ids];
	}
}
