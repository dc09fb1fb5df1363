/* proc_watch.c - reading /proc/PID/stat of the same processes again and
 * again (a sampler's pids, every second): the stat files stay open between
 * reads and are read again from offset 0, which makes the kernel write the
 * line afresh. That saves the open and close of each file (half the cost of a
 * read). A kept file names its process, not its pid number: once the process
 * exits, reading fails, and the pid is opened again by number (a new process
 * that took the pid is then read, and its new start time tells them apart).
 *
 * Files are kept for at most a quarter of the process's open-file limit in
 * all (the rest of the agent needs descriptors too: perf events, BPF maps,
 * sockets); pids beyond that are read by opening and closing each time. A
 * file is closed when a read does not ask for its pid. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api.h"
#include "base/grow_array.h"
#include "base/log.h"
#include "base/pid_table.h"
#include "proc/proc_root.h"
#include "proc/proc_stat.h"
#include "script_host/script_owner.h"

#define STAT_MAX 1024
#define MAX_KEPT_EACH 4096

struct kept {
	int32_t pid;
	int fd;
	uint32_t gen; /* the read that last asked for pid */
};

struct mr_proc_watch {
	struct kept *kept;
	size_t n_kept, cap;
	struct mr_pid_table *index; /* pid -> uint32_t position in kept */
	uint32_t gen;
	size_t limit; /* kept_limit() as of the current read */
};

/* Files kept by every watch of the process, against the limit: global since
 * the limit is the process's; atomic since specs and tools may read from
 * more than one thread. */
static atomic_size_t kept_total;

/* Closes a read-only /proc file. Its close cannot lose data, and Linux
 * releases the descriptor even when close reports an error, so there is
 * nothing to do about one. */
static void release(int fd)
{
	(void)close(fd);
}

static void free_owned(void *obj)
{
	mr_proc_watch_free(obj);
}

mr_proc_watch *mr_proc_watch_new(char *err, size_t errlen)
{
	mr_proc_watch *w = calloc(1, sizeof(*w));

	if (w)
		w->index = mr_pid_table_new(sizeof(uint32_t));
	if (!w || !w->index || mr_script_owner_add(w, free_owned) != 0) {
		mr_proc_watch_free(w);
		return mr_fail_null(mr_error(err, errlen, -ENOMEM, "out of memory for a process sampler"));
	}
	return w;
}

/* Closes the file at position i; the last one takes its place. */
static void drop(mr_proc_watch *w, size_t i)
{
	struct kept *k = &w->kept[i];

	release(k->fd);
	/* Every kept pid is in the index: removing it cannot fail. */
	(void)mr_pid_table_remove(w->index, k->pid);
	kept_total--;
	*k = w->kept[--w->n_kept];
	if (i < w->n_kept) {
		uint32_t *at = mr_pid_table_get(w->index, k->pid);

		if (at)
			*at = (uint32_t)i;
	}
}

void mr_proc_watch_free(mr_proc_watch *w)
{
	if (!w)
		return;
	mr_script_owner_remove(w);
	while (w->n_kept > 0)
		drop(w, w->n_kept - 1);
	free(w->kept);
	mr_pid_table_free(w->index);
	free(w);
}

/* How many files all watches may keep: a quarter of the open-file limit. */
static size_t kept_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 256;
	return (size_t)(rl.rlim_cur / 4);
}

/* Keeps fd open for pid; closes it when there is no room. */
static void keep(mr_proc_watch *w, int32_t pid, int fd)
{
	uint32_t *at;
	struct kept *grown;
	int added;

	if (w->n_kept >= MAX_KEPT_EACH || kept_total >= w->limit || w->n_kept >= UINT32_MAX)
		goto no_room;
	grown = mr_grow_array(w->kept, &w->cap, w->n_kept + 1, sizeof(*w->kept));
	if (!grown)
		goto no_room;
	w->kept = grown;
	at = mr_pid_table_put(w->index, pid, &added);
	if (!at)
		goto no_room;
	*at = (uint32_t)w->n_kept;
	w->kept[w->n_kept++] = (struct kept){ .pid = pid, .fd = fd, .gen = w->gen };
	kept_total++;
	return;
no_room:
	release(fd);
}

/* Reads the text of fd from offset 0, NUL-terminated; the length or -errno. */
static ssize_t read_at_start(int fd, char *text, size_t cap)
{
	ssize_t n;

	do {
		n = pread(fd, text, cap - 1, 0);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	text[n] = '\0';
	return n;
}

/* Reads pid through its kept file; -ENOENT when none is kept, another
 * negative errno (the file closed) when its process exited. */
static int read_kept(mr_proc_watch *w, int32_t pid, char *text, size_t cap)
{
	uint32_t *at = mr_pid_table_get(w->index, pid);
	ssize_t n;

	if (!at)
		return -ENOENT;
	n = read_at_start(w->kept[*at].fd, text, cap);
	if (n <= 0) {
		drop(w, *at);
		return n < 0 ? (int)n : -ESRCH;
	}
	w->kept[*at].gen = w->gen;
	return 0;
}

/* Opens and reads pid's stat file, keeping it open when there is room. */
static int read_new(mr_proc_watch *w, int32_t pid, char *text, size_t cap)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, rc = mr_proc_path(path, sizeof(path), pid, "stat");

	if (rc < 0)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno; /* ENOENT: the process is gone */
	n = read_at_start(fd, text, cap);
	if (n <= 0) {
		release(fd);
		return n < 0 ? (int)n : -ESRCH;
	}
	keep(w, pid, fd);
	return 0;
}

static int read_one(mr_proc_watch *w, int32_t pid, struct mr_proc_stat_fields *f)
{
	char text[STAT_MAX];
	int rc;

	if (pid <= 0)
		return -EINVAL;
	rc = read_kept(w, pid, text, sizeof(text)) == 0 ? 0 : read_new(w, pid, text, sizeof(text));
	return rc ? rc : mr_proc_stat_parse(text, f);
}

/* Closes the files of pids this read did not ask for. */
static void sweep(mr_proc_watch *w)
{
	size_t i = 0;

	while (i < w->n_kept) {
		if (w->kept[i].gen != w->gen)
			drop(w, i);
		else
			i++;
	}
}

int32_t mr_proc_watch_read(mr_proc_watch *w, const int32_t *pids, uint32_t n, struct mr_proc_stat *out)
{
	struct mr_proc_stat_fields f;
	long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	int32_t read = 0;

	if (!w || !pids || !out || hz <= 0 || page <= 0)
		return -EINVAL;
	if (n > INT32_MAX)
		n = INT32_MAX;
	w->gen++;
	w->limit = kept_limit();
	for (uint32_t i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		if (read_one(w, pids[i], &f) != 0)
			continue;
		mr_proc_stat_fill(&out[i], pids[i], &f, (double)hz, (uint64_t)page);
		read++;
	}
	sweep(w);
	return read;
}
