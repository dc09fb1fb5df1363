/* proc_files.c - facts about processes for discovery: the live pids, files of
 * /proc/PID (cmdline, comm, ...), the exe and cwd links, the start time, and
 * whether the executable has symbols. Everything is read below the proc root
 * (proc_root.h); callers pick file names from fixed sets, never paths. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>

#include "api.h"
#include "files/file_read.h"
#include "base/log.h"
#include "elf/elf_file.h"
#include "proc/proc_files.h"
#include "proc/proc_root.h"
#include "proc/proc_stat.h"

#define NS_PER_SEC 1000000000ull
#define STAT_MAX 1024

static const char *const READABLE[] = { "cmdline", "comm",   "cgroup",  "mountinfo",
					"stat",    "status", "environ", NULL };
static const char *const LINKS[] = { "exe", "cwd", NULL };

static int is_one_of(const char *name, const char *const *set)
{
	if (!name)
		return 0;
	for (; *set; set++) {
		if (strcmp(name, *set) == 0)
			return 1;
	}
	return 0;
}

/* Closes fd; the result is rc, or the close error when rc was not one. */
static int close_keeping(int fd, int rc)
{
	if (close(fd) != 0 && rc >= 0)
		return -errno;
	return rc;
}

/* The pid a directory entry of the proc root names, or 0 when it names none. */
static int32_t entry_pid(const struct dirent *d)
{
	const char *p = d->d_name;
	int64_t v = 0;

	if ((d->d_type != DT_DIR && d->d_type != DT_UNKNOWN) || !*p)
		return 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		v = v * 10 + (*p - '0');
		if (v > INT32_MAX)
			return 0;
	}
	return (int32_t)v;
}

/* Returns how many pids were stored. A result equal to max means there may
 * be more: the caller retries with more room. */
static int32_t list_failed(int32_t rc, char *err, size_t errlen)
{
	return mr_error(err, errlen, rc, "cannot list the processes in %s: %s", mr_proc_root(),
			strerror(-rc));
}

static int32_t read_failed(int32_t rc, int32_t pid, const char *file, char *err, size_t errlen)
{
	return mr_error(err, errlen, rc, "cannot read %s/%d/%s: %s", mr_proc_root(), (int)pid,
			file ? file : "(null)", strerror(-rc));
}

int32_t mr_proc_list(int32_t *pids, uint32_t max, char *err, size_t errlen)
{
	DIR *dir;
	struct dirent *d;
	int32_t n = 0, pid, rc = 0;

	if (!pids && max > 0)
		return list_failed(-EINVAL, err, errlen);
	if (max > INT32_MAX)
		max = INT32_MAX;
	dir = opendir(mr_proc_root());
	if (!dir)
		return list_failed(-errno, err, errlen);
	while ((uint32_t)n < max) {
		errno = 0;
		d = readdir(dir);
		if (!d) {
			rc = -errno;
			break;
		}
		pid = entry_pid(d);
		if (pid > 0)
			pids[n++] = pid;
	}
	if (closedir(dir) != 0 && rc == 0)
		rc = -errno;
	return rc < 0 ? list_failed(rc, err, errlen) : n;
}

/* Arguments are NUL-terminated: the last NUL goes, the others become spaces. */
static int32_t cmdline_to_text(char *buf, int32_t n)
{
	if (n > 0 && buf[n - 1] == '\0')
		n--;
	for (int32_t i = 0; i < n; i++) {
		if (buf[i] == '\0')
			buf[i] = ' ';
	}
	buf[n] = '\0';
	return n;
}

/* Reads a file of pid, NUL-terminated: the length, or a negative errno. */
static int32_t read_file(int32_t pid, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	int32_t n;

	if (!buf || len == 0 || !is_one_of(file, READABLE))
		return -EINVAL;
	buf[0] = '\0';
	if (len > INT32_MAX)
		len = INT32_MAX;
	n = mr_proc_path(path, sizeof(path), pid, file);
	if (n < 0)
		return n;
	n = (int32_t)mr_file_read_into(path, buf, len);
	if (n <= 0)
		return n;
	if (strcmp(file, "cmdline") == 0)
		return cmdline_to_text(buf, n);
	if (strcmp(file, "comm") == 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return n;
}

int32_t mr_proc_read(int32_t pid, const char *file, char *buf, size_t len, char *err, size_t errlen)
{
	int32_t n = read_file(pid, file, buf, len);

	return n < 0 ? read_failed(n, pid, file, err, errlen) : n;
}

int32_t mr_proc_comm(int32_t pid, char *buf, size_t len)
{
	return read_file(pid, "comm", buf, len);
}

int32_t mr_proc_link(int32_t pid, const char *what, char *buf, size_t len, char *err, size_t errlen)
{
	char path[PATH_MAX];
	ssize_t n;
	int rc;

	if (!buf || len == 0 || !is_one_of(what, LINKS))
		return read_failed(-EINVAL, pid, what, err, errlen);
	buf[0] = '\0';
	if (len > INT32_MAX)
		len = INT32_MAX;
	rc = mr_proc_path(path, sizeof(path), pid, what);
	if (rc < 0)
		return read_failed(rc, pid, what, err, errlen);
	n = readlink(path, buf, len - 1);
	if (n < 0)
		return read_failed(-errno, pid, what, err, errlen);
	buf[n] = '\0';
	return (int32_t)n;
}

uint64_t mr_proc_start_ns(int32_t pid)
{
	char stat[STAT_MAX];
	long hz = sysconf(_SC_CLK_TCK);
	struct mr_proc_stat_fields f;
	uint64_t ticks;

	if (hz <= 0 || read_file(pid, "stat", stat, sizeof(stat)) <= 0 || mr_proc_stat_parse(stat, &f) != 0)
		return 0;
	ticks = f.start_ticks;
	return ticks / (uint64_t)hz * NS_PER_SEC + ticks % (uint64_t)hz * NS_PER_SEC / (uint64_t)hz;
}

/* A symbol table holding more than its leading null symbol. */
static int is_symbol_table(Elf_Scn *scn)
{
	GElf_Shdr sh;

	if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
		return 0;
	return sh.sh_entsize > 0 && sh.sh_size > sh.sh_entsize;
}

/* Looks at the section headers only; no symbol is read. */
static int has_symbol_table(Elf *e)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		if (is_symbol_table(scn))
			return 1;
	}
	return 0;
}

/* Rover's support_ebpf_profiling also excludes executables whose name starts
 * with java, python, node, bash, ruby or ssh: that policy stays in Lua. */
static int32_t has_symbols(int32_t pid)
{
	char path[PATH_MAX];
	Elf *e;
	int fd, rc = mr_proc_path(path, sizeof(path), pid, "exe");

	if (rc < 0)
		return rc;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = mr_elf_open(fd, &e);
	if (rc == 0) {
		rc = has_symbol_table(e);
		elf_end(e);
	}
	return close_keeping(fd, rc);
}

int32_t mr_proc_has_symbols(int32_t pid, char *err, size_t errlen)
{
	int32_t rc = has_symbols(pid);

	return rc < 0 ? read_failed(rc, pid, "exe", err, errlen) : rc;
}

int32_t mr_proc_self(void)
{
	return (int32_t)getpid();
}

int32_t mr_proc_exists(int32_t pid)
{
	char path[PATH_MAX];

	return pid > 0 && mr_proc_path(path, sizeof(path), pid, "stat") == 0 && access(path, F_OK) == 0;
}
