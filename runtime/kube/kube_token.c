/* kube_token.c - the bearer token, re-read from its file when the file
 * changes: a service account's projected token is rotated by the kubelet,
 * which swaps the file (a new inode), so the file's inode, size and
 * modification time are compared at most once a second. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/kube_internal.h"

#define CHECK_EVERY_MS 1000
#define TOKEN_MAX 65536

static int same_file(const struct mr_kube *k, const struct stat *st)
{
	return st->st_ino == k->token_ino && st->st_size == k->token_size &&
	       st->st_mtim.tv_sec == k->token_mtime.tv_sec && st->st_mtim.tv_nsec == k->token_mtime.tv_nsec;
}

/* The file's text without surrounding white space, or NULL with errno. */
static char *read_token(const char *path)
{
	char *buf = malloc(TOKEN_MAX + 1), *start;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n = 0;
	int saved;

	if (!buf || fd < 0)
		goto fail;
	while (len < TOKEN_MAX && (n = read(fd, buf + len, TOKEN_MAX - len)) > 0)
		len += (size_t)n;
	if (n < 0)
		goto fail;
	close(fd);
	buf[len] = 0;
	while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
		buf[--len] = 0;
	for (start = buf; *start && strchr(" \t\r\n", *start); start++)
		;
	memmove(buf, start, strlen(start) + 1);
	return buf;
fail:
	saved = errno ? errno : ENOMEM;
	if (fd >= 0)
		close(fd);
	free(buf);
	errno = saved;
	return NULL;
}

void mr_kube_token_refresh(struct mr_kube *k, int force)
{
	uint64_t now = mr_kube_now_ms();
	struct stat st;
	char *token;

	if (!k->token_file || (!force && k->token_checked_ms && now - k->token_checked_ms < CHECK_EVERY_MS))
		return;
	k->token_checked_ms = now;
	if (stat(k->token_file, &st) != 0) {
		mr_kube_note_error(k, "cannot read the token file %s: %s", k->token_file, strerror(errno));
		return;
	}
	if (k->token && same_file(k, &st))
		return;
	token = read_token(k->token_file);
	if (!token) {
		mr_kube_note_error(k, "cannot read the token file %s: %s", k->token_file, strerror(errno));
		return;
	}
	free(k->token);
	k->token = token;
	k->token_ino = st.st_ino;
	k->token_size = st.st_size;
	k->token_mtime = st.st_mtim;
}
