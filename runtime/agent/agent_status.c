/* agent_status.c - the agent's status file (agent_status.h): a few lines of
 * text beside the pid file, whole or not at all, since it is written under a
 * new name and renamed into place (files/output_file.h):
 *
 *   pid 4242
 *   reload 3
 *   result refused
 *   the reason (or what was done), on this line and the ones after
 *
 * The result is ok or refused, or after the first start ok or failed (a
 * script did not start). The pid says which agent wrote it: a file left by
 * an agent that died is never taken for the answer of the one that runs
 * now. */
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

/* The status file's path for a pid file; NULL when out of memory. */
static char *status_path(const char *pid_file)
{
	size_t len = strlen(pid_file) + sizeof(SUFFIX);
	char *path = malloc(len);

	if (path)
		snprintf(path, len, "%s%s", pid_file, SUFFIX);
	return path;
}

static int format_status(char *buf, size_t len, const struct mr_script_set *h)
{
	int n;

	if (!h->last_reload_ok)
		n = snprintf(buf, len, "pid %d\nreload %" PRIu64 "\nresult %s\n%s\n", (int)getpid(),
			     h->reloads, h->reloads ? "refused" : "failed", h->last_error);
	else
		n = snprintf(buf, len, "pid %d\nreload %" PRIu64 "\nresult ok\nloaded %zu script(s)\n",
			     (int)getpid(), h->reloads, h->nscripts);
	return n < 0 ? 0 : (n < (int)len ? n : (int)len - 1);
}

int mr_agent_status_write(const char *pid_file, const struct mr_script_set *h, char *err, size_t errlen)
{
	char text[STATUS_MAX];
	char *path = status_path(pid_file);
	int n = format_status(text, sizeof(text), h), rc;
	mr_output *out;

	if (!path)
		return mr_error(err, errlen, -ENOMEM, "out of memory");
	out = mr_output_open(path, err, errlen);
	free(path);
	if (!out)
		return -EIO;
	rc = mr_output_write(out, text, (size_t)n, err, errlen);
	if (rc != 0) {
		mr_output_abort(out);
		return rc;
	}
	return mr_output_commit(out, err, errlen);
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

static int parse_status(char *text, struct mr_agent_status *out)
{
	char *at = text, *end;
	const char *pid = field(&at, "pid"), *reload = pid ? field(&at, "reload") : NULL;
	const char *result = reload ? field(&at, "result") : NULL;

	if (!result)
		return -EINVAL;
	out->pid = (int32_t)strtol(pid, &end, 10);
	if (*end)
		return -EINVAL;
	out->reload = strtoll(reload, &end, 10);
	if (*end)
		return -EINVAL;
	out->ok = strcmp(result, "ok") == 0;
	end = at + strlen(at);
	if (end > at && end[-1] == '\n')
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
			mr_error(err, errlen, rc, "%s is not an agent's status file", path);
	} else {
		rc = (int)n;
	}
	free(path);
	return rc;
}
