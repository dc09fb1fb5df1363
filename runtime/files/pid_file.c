/* pid_file.c - a locked pid file (see pid_file.h). A process holds the file
 * when it has it open with an exclusive flock: /proc/PID/fdinfo shows the
 * lock beside the descriptor, which is how a holder is recognised. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "files/pid_file.h"
#include "files/safe_path.h"

#define PID_FILE_MODE 0644
/* A file that is locked but not by the pid it names is being replaced by
 * another agent (it took the stale file's lock) or locked by something else:
 * looked at again this many times, this far apart, before giving up. */
#define PUBLISH_TRIES 100
#define RETRY_NS 10000000L

struct mr_pid_file {
	char *path;
	const char *name; /* the file's name in dirfd (inside path) */
	char *tmp_name;   /* while not yet in place */
	int dirfd;
	int fd; /* holds the lock */
	int published;
};

/* The directory as written in path, for messages. */
static void dir_of(const mr_pid_file *pf, char *buf, size_t len)
{
	size_t at = (size_t)(pf->name - pf->path);

	snprintf(buf, len, "%.*s", at <= 1 ? 1 : (int)(at - 1), at ? pf->path : ".");
}

static int check_dir(const mr_pid_file *pf, char *why, size_t whylen)
{
	char dir[256];
	struct stat st;
	int ours, shared;

	if (fstat(pf->dirfd, &st) != 0)
		return mr_error(why, whylen, -errno, "%s", strerror(errno));
	ours = st.st_uid == 0 || st.st_uid == geteuid();
	shared = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
	if (ours && (!shared || (st.st_mode & S_ISVTX)))
		return 0;
	dir_of(pf, dir, sizeof(dir));
	return mr_error(why, whylen, -EPERM,
			"its directory %s can be written by other users (mode %03o, owner uid %u), who could "
			"replace it; use a directory only root or this user can write",
			dir, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
}

/* The pid written in the file: digits and a newline, nothing else. */
static int32_t read_pid(int fd)
{
	char buf[24];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *end;
	long pid;

	if (n <= 0)
		return -EINVAL;
	buf[n] = '\0';
	errno = 0;
	pid = strtol(buf, &end, 10);
	if (errno || end == buf || buf[0] < '0' || buf[0] > '9' || pid <= 0 || pid > INT32_MAX ||
	    (*end && strcmp(end, "\n") != 0))
		return -EINVAL;
	return (int32_t)pid;
}

/* 1 when descriptor fd of process pid holds an exclusive flock. */
static int fd_locks(int32_t pid, const char *fd)
{
	char path[320], line[256];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, fd);
	f = fopen(path, "re");
	if (!f)
		return 0; /* closed meanwhile: not that one */
	while (!found && fgets(line, sizeof(line), f))
		found = strncmp(line, "lock:", 5) == 0 && strstr(line, " FLOCK ") && strstr(line, " WRITE ");
	fclose(f);
	return found;
}

/* 0 when process pid has file open with its lock held: -ESRCH when it does
 * not or has exited, another negative errno when it cannot be told. */
static int holds(int32_t pid, const struct stat *file)
{
	char path[32];
	struct dirent *e;
	DIR *d;
	int rc = -ESRCH;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (rc != 0 && (e = readdir(d)) != NULL) {
		struct stat st;

		if (e->d_name[0] != '.' && fstatat(dirfd(d), e->d_name, &st, 0) == 0 &&
		    st.st_dev == file->st_dev && st.st_ino == file->st_ino && fd_locks(pid, e->d_name))
			rc = 0;
	}
	closedir(d);
	return rc;
}

static int alive(int32_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

/* Opens the file at name in dirfd to read it, refusing a link. */
static int open_existing(int dirfd, const char *name, struct stat *st, char *why, size_t whylen)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return mr_error(why, whylen, -errno, "%s",
				errno == ELOOP ? "it is a symbolic link (not followed)" : strerror(errno));
	if (fstat(fd, st) == 0 && S_ISREG(st->st_mode))
		return fd;
	close(fd);
	return mr_error(why, whylen, -EINVAL, "it is not a regular file");
}

static int make_locked_temp(mr_pid_file *pf, char *why, size_t whylen)
{
	char text[16];
	int len = snprintf(text, sizeof(text), "%d\n", (int)getpid());

	pf->fd = mr_safe_path_create_temp(pf->dirfd, pf->name, PID_FILE_MODE, &pf->tmp_name, why, whylen);
	if (pf->fd < 0)
		return pf->fd;
	errno = 0;
	if (write(pf->fd, text, (size_t)len) != len)
		return mr_error(why, whylen, -EIO, "%s", strerror(errno ? errno : EIO));
	if (flock(pf->fd, LOCK_EX | LOCK_NB) != 0)
		return mr_error(why, whylen, -errno, "%s", strerror(errno));
	return 0;
}

/* The file at name is there: a stale one (unlocked) is replaced, after
 * taking its lock so that no other agent replaces it at the same time; a
 * held one is named. -EAGAIN: look again. */
static int replace_stale(mr_pid_file *pf, char *why, size_t whylen)
{
	struct stat st, now;
	int fd = open_existing(pf->dirfd, pf->name, &st, why, whylen), rc;
	int32_t pid;

	if (fd == -ENOENT)
		return mr_error(why, whylen, -EAGAIN, "it kept changing while being replaced");
	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		rc = fstatat(pf->dirfd, pf->name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
				     now.st_ino == st.st_ino && now.st_dev == st.st_dev
			     ? 0
			     : mr_error(why, whylen, -EAGAIN, "it kept changing while being replaced");
		if (rc == 0 && renameat(pf->dirfd, pf->tmp_name, pf->dirfd, pf->name) != 0)
			rc = mr_error(why, whylen, -errno, "%s", strerror(errno));
		close(fd);
		return rc;
	}
	rc = errno == EWOULDBLOCK ? 0 : mr_error(why, whylen, -errno, "%s", strerror(errno));
	pid = rc == 0 ? read_pid(fd) : rc;
	if (rc == 0 && pid > 0 && holds(pid, &st) == 0)
		rc = mr_error(why, whylen, -EBUSY,
			      "another agent (pid %d) holds it; stop that one first, or give this one another "
			      "pid file",
			      (int)pid);
	else if (rc == 0)
		rc = mr_error(why, whylen, -EAGAIN, "it is locked by a process other than the one it names");
	close(fd);
	return rc;
}

/* Puts the locked temporary file in place. */
static int publish(mr_pid_file *pf, char *why, size_t whylen)
{
	struct timespec pause = { .tv_nsec = RETRY_NS };
	int rc = -EAGAIN;

	for (int i = 0; i < PUBLISH_TRIES && rc == -EAGAIN; i++) {
		if (i > 0)
			nanosleep(&pause, NULL);
		if (linkat(pf->dirfd, pf->tmp_name, pf->dirfd, pf->name, 0) == 0) {
			pf->published = 1;
			rc = unlinkat(pf->dirfd, pf->tmp_name, 0) == 0
				     ? 0
				     : mr_error(why, whylen, -errno, "%s", strerror(errno));
		} else if (errno != EEXIST) {
			return mr_error(why, whylen, -errno, "%s", strerror(errno));
		} else if ((rc = replace_stale(pf, why, whylen)) == 0) {
			pf->published = 1;
		}
	}
	if (rc == 0) {
		free(pf->tmp_name);
		pf->tmp_name = NULL;
	}
	return rc;
}

static int take(mr_pid_file *pf, char *why, size_t whylen)
{
	size_t name_at;
	int rc;

	pf->dirfd = mr_safe_path_open_dir(pf->path, &name_at, why, whylen);
	if (pf->dirfd < 0)
		return pf->dirfd;
	pf->name = pf->path + name_at;
	rc = check_dir(pf, why, whylen);
	rc = rc ?: make_locked_temp(pf, why, whylen);
	return rc ?: publish(pf, why, whylen);
}

mr_pid_file *mr_pid_file_acquire(const char *path, char *err, size_t errlen)
{
	char why[512] = "out of memory";
	mr_pid_file *pf = calloc(1, sizeof(*pf));
	int rc = -ENOMEM;

	if (pf) {
		pf->dirfd = pf->fd = -1;
		pf->path = strdup(path ? path : "");
		rc = pf->path ? take(pf, why, sizeof(why)) : -ENOMEM;
	}
	if (rc == 0)
		return pf;
	mr_error(err, errlen, rc, "cannot use the pid file %s: %s", path ? path : "", why);
	mr_pid_file_release(pf);
	return mr_fail_null(rc);
}

void mr_pid_file_release(mr_pid_file *pf)
{
	struct stat mine, there;

	if (!pf)
		return;
	if (pf->published && fstat(pf->fd, &mine) == 0 &&
	    fstatat(pf->dirfd, pf->name, &there, AT_SYMLINK_NOFOLLOW) == 0 && mine.st_ino == there.st_ino &&
	    mine.st_dev == there.st_dev)
		(void)unlinkat(pf->dirfd, pf->name, 0); /* still locked: nobody replaced it meanwhile */
	if (pf->tmp_name)
		(void)unlinkat(pf->dirfd, pf->tmp_name, 0);
	if (pf->fd >= 0)
		close(pf->fd);
	if (pf->dirfd >= 0)
		close(pf->dirfd);
	free(pf->tmp_name);
	free(pf->path);
	free(pf);
}

/* The pid in the file at path, with the file's identity in *st. */
static int32_t named_pid(const char *path, struct stat *st, char *why, size_t whylen)
{
	size_t name_at;
	int dirfd = mr_safe_path_open_dir(path, &name_at, why, whylen), fd;
	int32_t pid;

	if (dirfd < 0)
		return dirfd;
	fd = open_existing(dirfd, path + name_at, st, why, whylen);
	close(dirfd);
	if (fd < 0)
		return fd;
	pid = read_pid(fd);
	close(fd);
	return pid > 0 ? pid : mr_error(why, whylen, pid, "it does not hold a process id");
}

int32_t mr_pid_file_holder(const char *path, char *err, size_t errlen)
{
	char why[512] = "";
	struct stat st;
	int32_t pid = named_pid(path, &st, why, sizeof(why));
	int rc;

	if (pid == -ENOENT)
		return mr_error(err, errlen, pid, "cannot read %s: %s (is the agent running?)", path, why);
	if (pid < 0)
		return mr_error(err, errlen, pid, "cannot use the pid file %s: %s", path, why);
	rc = holds(pid, &st);
	if (rc == 0)
		return pid;
	if (rc == -ESRCH && !alive(pid))
		return mr_error(err, errlen, rc, "no agent holds %s: process %d, which it names, has exited",
				path, (int)pid);
	if (rc == -ESRCH)
		return mr_error(err, errlen, rc,
				"process %d, which %s names, does not hold that pid file: it is not the agent "
				"that wrote it (another command, or a reused pid)",
				(int)pid, path);
	return mr_error(err, errlen, rc, "cannot tell whether process %d holds %s: %s", (int)pid, path,
			strerror(-rc));
}
