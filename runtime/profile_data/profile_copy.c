/* profile_copy.c - adds the samples of some processes of one profile into
 * another: what lets profiles that share one profiler each keep only their
 * own processes' stacks. Strings, modules and frames are interned again in
 * the destination, each source id translated once per copy. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/grow_array.h"
#include "base/log.h"
#include "profile_data/profile_internal.h"

struct copy {
	mr_profile *dst;
	const mr_profile *src;
	uint32_t *modules; /* source module id -> destination id, MR_HASH_NONE until seen */
	uint32_t *frames;  /* source frame id -> destination id, likewise */
	uint32_t *stack;   /* one sample's translated stack */
	size_t stack_cap;
};

static int cmp_pid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/* Whether pid is one of pids (ascending); every pid when there are none. */
static int wanted(int32_t pid, const int32_t *pids, uint32_t npids)
{
	return npids == 0 || bsearch(&pid, pids, npids, sizeof(*pids), cmp_pid) != NULL;
}

static int module_of(struct copy *c, uint32_t id, uint32_t *out, char *err, size_t errlen)
{
	const struct mr_module *m = &c->src->modules[id];
	int rc;

	if (id == 0) {
		*out = 0; /* "none" is module 0 in every profile */
		return 0;
	}
	if (c->modules[id] == MR_HASH_NONE) {
		rc = mr_profile_module_add(c->dst, mr_profile_string(c->src, m->path),
					   mr_profile_string(c->src, m->build_id), (int32_t)m->executable,
					   &c->modules[id], err, errlen);
		if (rc)
			return rc;
	}
	*out = c->modules[id];
	return 0;
}

static int frame_of(struct copy *c, uint32_t id, uint32_t *out, char *err, size_t errlen)
{
	struct mr_frame f;
	int rc;

	if (c->frames[id] == MR_HASH_NONE) {
		f = c->src->frames[id];
		rc = mr_profile_string_add(c->dst, mr_profile_string(c->src, f.name), &f.name, err, errlen);
		rc = rc ?: module_of(c, f.module, &f.module, err, errlen);
		rc = rc ?: mr_profile_frame_add(c->dst, &f, &c->frames[id], err, errlen);
		if (rc)
			return rc;
	}
	*out = c->frames[id];
	return 0;
}

static int copy_sample(struct copy *c, const struct mr_sample *s, char *err, size_t errlen)
{
	uint32_t *stack = mr_grow_array(c->stack, &c->stack_cap, s->depth, sizeof(*stack));
	struct mr_sample_thread thread = { .tid = s->tid };
	int rc;

	if (!stack)
		return mr_error(err, errlen, -ENOMEM, "cannot copy a profile: out of memory");
	c->stack = stack;
	for (uint32_t i = 0; i < s->depth; i++) {
		rc = frame_of(c, c->src->stack[s->first + i], &stack[i], err, errlen);
		if (rc)
			return rc;
	}
	thread.name = mr_profile_string(c->src, s->thread);
	return mr_profile_thread_sample_add(c->dst, s->pid, mr_profile_string(c->src, s->comm), &thread,
					    stack, s->depth, s->count, s->nanos, err, errlen);
}

static uint32_t *unseen_ids(size_t n)
{
	uint32_t *ids = malloc((n ? n : 1) * sizeof(*ids));

	for (size_t i = 0; ids && i < n; i++)
		ids[i] = MR_HASH_NONE;
	return ids;
}

int mr_profile_copy(mr_profile *dst, const mr_profile *src, const int32_t *pids, uint32_t npids, char *err,
		    size_t errlen)
{
	struct copy c = { .dst = dst, .src = src };
	int rc = 0;

	if (!dst || !src || dst == src || (npids && !pids))
		return mr_error(err, errlen, -EINVAL, "cannot copy a profile: bad arguments");
	c.modules = unseen_ids(src->nmodules);
	c.frames = unseen_ids(src->nframes);
	if (!c.modules || !c.frames)
		rc = mr_error(err, errlen, -ENOMEM, "cannot copy a profile: out of memory");
	for (size_t i = 0; rc == 0 && i < src->nsamples; i++)
		if (wanted(src->samples[i].pid, pids, npids))
			rc = copy_sample(&c, &src->samples[i], err, errlen);
	free(c.modules);
	free(c.frames);
	free(c.stack);
	return rc;
}
