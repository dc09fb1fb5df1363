/* agent_status.c - the agent's status file (agent_status.h): a few lines of
 * text beside the pid file, whole or not at all, since it is written under a
 * new name and renamed into place (files/output_file.h):
 *
 *   pid 4242
 *   began 81234567890
 *   reload 3
 *   result refused
 *   the reason (or what was done), on this line and the ones after
 *
 * began is the CLOCK_MONOTONIC time (ns) the (re)load began reading the
 * scripts: `moonrover reload` takes for its answer only one that began after
 * it asked. The result is ok or refused, or after the first start ok or
 * failed (a script did not start). The agent removes the file when it takes
 * the pid file and when it stops, so a file left by an earlier agent with
 * the same pid is never read as this one's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_status.h"
#include "api.h"
#include "base/log.h"
#include "script_host/script_set.h"

#define SUFFIX ".status"
#define STATUS_MAX 4096

static const char *const RESULTS[] = { "ok", "refused", "failed" };

/* The status file's path for a pid file; NULL when out of memory. */
static char *status_path(const char *pid_file)
{
	size_t len = strlen(pid_file) + sizeof(SUFFIX);
	char *path = malloc(len);

	if (path)
		snprintf(path, len, "%s%s", pid_file, SUFFIX);
	return path;
}

void mr_agent_status_of(const struct mr_script_set *h, uint64_t began_ns, struct mr_agent_status *out)
{
	memset(out, 0, sizeof(*out));
	out->pid = (int32_t)getpid();
	out->began_ns = began_ns;
	out->reload = (int64_t)h->reloads;
	if (h->last_reload_ok) {
		out->result = MR_AGENT_RESULT_OK;
		snprintf(out->detail, sizeof(out->detail), "loaded %zu script(s)", h->nscripts);
	} else {
		out->result = h->reloads ? MR_AGENT_RESULT_REFUSED : MR_AGENT_RESULT_FAILED;
		snprintf(out->detail, sizeof(out->detail), "%s", h->last_error);
	}
}

static int format_status(char *buf, size_t len, const struct mr_agent_status *st)
{
	const char *result = st->result < sizeof(RESULTS) / sizeof(RESULTS[0]) ? RESULTS[st->result]
									       : "refused";
	int n = snprintf(buf, len, "pid %d\nbegan %" PRIu64 "\nreload %" PRId64 "\nresult %s\n%s\n",
			 (int)st->pid, st->began_ns, st->reload, result, st->detail);

	return n < 0 ? 0 : (n < (int)len ? n : (int)len - 1);
}

int mr_agent_status_write(const char *pid_file, const struct mr_agent_status *st, char *err, size_t errlen)
{
	char text[STATUS_MAX];
	char *path = status_path(pid_file);
	int n = format_status(text, sizeof(text), st), rc;
	mr_output *out;

	if (!path)
		return mr_error(err, errlen, -ENOMEM, "out of memory");
	out = mr_output_open(path, err, errlen);
	free(path);
	if (!out)
		return -errno;
	rc = mr_output_write(out, text, (size_t)n, err, errlen);
	if (rc != 0) {
		mr_output_abort(out);
		return rc;
	}
	return mr_output_commit(out, err, errlen);
}

int mr_agent_status_remove(const char *pid_file, char *err, size_t errlen)
{
	char *path = status_path(pid_file);
	int rc = 0;

	if (!path)
		return mr_error(err, errlen, -ENOMEM, "out of memory");
	if (unlink(path) != 0 && errno != ENOENT)
		rc = mr_error(err, errlen, -errno, "cannot remove %s: %s", path, strerror(errno));
	free(path);
	return rc;
}

/* The value after "key " on the line at *at, which moves to the next line. */
static const char *field(char **at, const char *key)
{
	size_t n = strlen(key);
	char *line = *at, *end = strchr(line, '\n');

	if (!end || strncmp(line, key, n) != 0 || line[n] != ' ')
		return NULL;
	*end = '\0';
	*at = end + 1;
	return line + n + 1;
}

/* A whole decimal number of at least min: 0, or -EINVAL. */
static int number(const char *text, long long min, long long *out)
{
	char *end;

	if (!text || *text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoll(text, &end, 10);
	return *end || errno || *out < min ? -EINVAL : 0;
}

static int result_of(const char *text, uint32_t *out)
{
	for (uint32_t i = 0; text && i < sizeof(RESULTS) / sizeof(RESULTS[0]); i++) {
		if (strcmp(text, RESULTS[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_status(char *text, struct mr_agent_status *out)
{
	char *at = text, *end;
	const char *pid = field(&at, "pid"), *began = pid ? field(&at, "began") : NULL;
	const char *reload = began ? field(&at, "reload") : NULL,
		   *result = reload ? field(&at, "result") : NULL;
	long long n[3];

	memset(out, 0, sizeof(*out));
	if (number(pid, 1, &n[0]) || n[0] > INT32_MAX || number(began, 0, &n[1]) ||
	    number(reload, 0, &n[2]) || result_of(result, &out->result))
		return -EINVAL;
	out->pid = (int32_t)n[0];
	out->began_ns = (uint64_t)n[1];
	out->reload = n[2];
	end = at + strlen(at);
	/* Whole files end in a newline: one cut short has none. */
	if (end == at || end[-1] != '\n')
		return -EINVAL;
	end[-1] = '\0';
	snprintf(out->detail, sizeof(out->detail), "%s", at);
	return 0;
}

int mr_agent_status_read(const char *pid_file, struct mr_agent_status *out, char *err, size_t errlen)
{
	char text[STATUS_MAX + 1];
	char *path = status_path(pid_file);
	int64_t n;
	int rc;

	if (!path)
		return mr_error(err, errlen, -ENOMEM, "out of memory");
	n = mr_text_file_read(path, text, STATUS_MAX, err, errlen);
	if (n >= 0) {
		text[n] = '\0';
		rc = parse_status(text, out);
		if (rc != 0)
			mr_error(err, errlen, rc, "%s is not a whole agent's status file", path);
	} else {
		rc = (int)n;
	}
	free(path);
	return rc;
}

int mr_agent_status_answers(const struct mr_agent_status *st, int32_t pid, uint64_t asked_ns)
{
	return st->pid == pid && st->began_ns >= asked_ns;
}
