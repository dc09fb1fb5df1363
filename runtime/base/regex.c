/* regex.c - POSIX extended regular expressions (<regex.h>) for the process
 * naming rules in Lua: compile once, match with submatch offsets. */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>

#include "api.h"
#include "base/log.h"

#define REGERROR_MAX 256

struct mr_regex {
	regex_t re;
};

/* Writes the message and returns NULL with errno set to -rc. */
static void *fail(char *err, size_t errlen, int rc, const char *pattern, const char *reason)
{
	return mr_fail_null(
		mr_error(err, errlen, rc, "invalid regular expression \"%s\": %s", pattern, reason));
}

mr_regex *mr_regex_new(const char *pattern, char *err, size_t errlen)
{
	char reason[REGERROR_MAX];
	mr_regex *r;
	int rc;

	if (!pattern)
		return fail(err, errlen, -EINVAL, "", "no pattern");
	r = calloc(1, sizeof(*r));
	if (!r)
		return fail(err, errlen, -ENOMEM, pattern, "out of memory");
	rc = regcomp(&r->re, pattern, REG_EXTENDED);
	if (rc != 0) {
		regerror(rc, &r->re, reason, sizeof(reason));
		free(r);
		return fail(err, errlen, rc == REG_ESPACE ? -ENOMEM : -EINVAL, pattern, reason);
	}
	return r;
}

/* Copies the submatches as byte offsets (start, end exclusive); groups the
 * pattern does not have, or that took no part, get -1. */
static void copy_groups(const regmatch_t *m, size_t nm, int32_t *groups, uint32_t max_groups)
{
	for (uint32_t i = 0; i < max_groups; i++) {
		groups[2 * i] = i < nm ? (int32_t)m[i].rm_so : -1;
		groups[2 * i + 1] = i < nm ? (int32_t)m[i].rm_eo : -1;
	}
}

int32_t mr_regex_match(const mr_regex *r, const char *s, int32_t *groups, uint32_t max_groups, char *err,
		       size_t errlen)
{
	regmatch_t *m = NULL;
	size_t nm = 0;
	int rc;

	if (!r || !s || (!groups && max_groups > 0)) {
		snprintf(err, errlen, "regex match: no expression, no text or no room for the groups");
		return -EINVAL;
	}
	if (max_groups > 0) {
		nm = r->re.re_nsub + 1 < max_groups ? r->re.re_nsub + 1 : max_groups;
		m = calloc(nm, sizeof(*m));
		if (!m) {
			snprintf(err, errlen, "regex match: out of memory");
			return -ENOMEM;
		}
	}
	rc = regexec(&r->re, s, nm, m, 0);
	if (rc == 0 && max_groups > 0)
		copy_groups(m, nm, groups, max_groups);
	free(m);
	if (rc == 0 || rc == REG_NOMATCH)
		return rc == 0;
	snprintf(err, errlen, "regex match: out of memory");
	return -ENOMEM;
}

void mr_regex_free(mr_regex *r)
{
	if (!r)
		return;
	regfree(&r->re);
	free(r);
}
