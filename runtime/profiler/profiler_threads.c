/* profiler_threads.c - the names of sampled threads, for per-thread profiles:
 * read from /proc/PID/task/TID/comm once per drain and kept for the rest of
 * it. A thread that exited before the drain keeps its id but no name. */
#include <limits.h>
#include <stdio.h>

#include "api_test.h"
#include "files/file_read.h"
#include "base/pid_table.h"
#include "proc/proc_root.h"
#include "profiler/profiler_internal.h"

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

const char *mr_profiler_thread_name(struct mr_pid_table *names, int32_t pid, int32_t tid)
{
	int added = 0;
	char *name = mr_pid_table_put(names, tid, &added);

	if (!name)
		return "";
	if (added)
		read_thread_name(pid, tid, name, MR_COMM_LEN + 1);
	return name;
}
