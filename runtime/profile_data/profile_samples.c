/* profile_samples.c - aggregation of samples by (pid, comm, thread, stack): adding
 * a known stack again sums its count and nanos; each distinct stack's frame
 * ids are stored once, leaf first, in one flat array. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/grow_array.h"
#include "profile_data/profile_internal.h"

struct sample_key {
	const struct mr_profile *p;
	int32_t pid;
	uint32_t comm;
	int32_t tid;
	uint32_t thread;
	const uint32_t *frames;
	uint32_t depth;
};

static uint32_t sample_hash(const struct sample_key *k)
{
	uint64_t h = mr_hash_word(mr_hash_word(MR_HASH_SEED, (uint32_t)k->pid), k->comm);

	h = mr_hash_word(mr_hash_word(h, (uint32_t)k->tid), k->thread);
	uint32_t i;

	for (i = 0; i < k->depth; i++)
		h = mr_hash_word(h, k->frames[i]);
	return mr_hash_finish(mr_hash_word(h, k->depth));
}

static int sample_equal(const void *ctx, uint32_t id)
{
	const struct sample_key *k = ctx;
	const struct mr_sample *s = &k->p->samples[id];

	return s->pid == k->pid && s->comm == k->comm && s->tid == k->tid && s->thread == k->thread &&
	       s->depth == k->depth &&
	       (k->depth == 0 ||
		memcmp(&k->p->stack[s->first], k->frames, k->depth * sizeof(*k->frames)) == 0);
}

static int stack_valid(const struct mr_profile *p, const uint32_t *frames, uint32_t depth)
{
	uint32_t i;

	if (depth && !frames)
		return 0;
	for (i = 0; i < depth; i++)
		if (frames[i] >= p->nframes)
			return 0;
	return 1;
}

/* Makes room, indexes the new sample, and only then stores it, so that a
 * failure leaves the profile as it was. */
static int sample_append(struct mr_profile *p, const struct sample_key *k, uint32_t hash, uint32_t *id)
{
	struct mr_sample *samples;
	uint32_t *stack;

	if (p->nsamples >= MR_HASH_NONE || p->nstack + k->depth > UINT32_MAX)
		return -EOVERFLOW;
	samples = mr_grow_array(p->samples, &p->samples_cap, p->nsamples + 1, sizeof(*samples));
	if (!samples)
		return -ENOMEM;
	p->samples = samples;
	stack = mr_grow_array(p->stack, &p->stack_cap, p->nstack + k->depth, sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	p->stack = stack;
	if (mr_hash_index_insert(&p->sample_index, hash, (uint32_t)p->nsamples))
		return -ENOMEM;
	if (k->depth)
		memcpy(&p->stack[p->nstack], k->frames, k->depth * sizeof(*k->frames));
	*id = (uint32_t)p->nsamples++;
	p->samples[*id] = (struct mr_sample){
		.pid = k->pid,
		.comm = k->comm,
		.tid = k->tid,
		.thread = k->thread,
		.first = (uint32_t)p->nstack,
		.depth = k->depth,
	};
	p->nstack += k->depth;
	return 0;
}

int mr_profile_thread_sample_add(mr_profile *p, int32_t pid, const char *comm,
				 const struct mr_sample_thread *thread, const uint32_t *frames,
				 uint32_t depth, uint64_t count, uint64_t nanos, char *err, size_t errlen)
{
	struct sample_key key = { .p = p, .pid = pid, .frames = frames, .depth = depth };
	uint32_t hash;
	uint32_t id;
	int rc;

	if (!p || !thread || !stack_valid(p, frames, depth)) {
		snprintf(err, errlen,
			 "cannot add a sample: no profile or thread, or a frame id it does not have");
		return -EINVAL;
	}
	key.tid = thread->tid;
	key.comm = mr_intern_add(&p->strings, comm);
	key.thread = mr_intern_add(&p->strings, thread->tid ? thread->name : "");
	if (key.comm == MR_HASH_NONE || key.thread == MR_HASH_NONE) {
		snprintf(err, errlen, "cannot add a sample: out of memory");
		return -ENOMEM;
	}
	hash = sample_hash(&key);
	id = mr_hash_index_find(&p->sample_index, hash, sample_equal, &key);
	if (id == MR_HASH_NONE) {
		rc = sample_append(p, &key, hash, &id);
		if (rc) {
			snprintf(err, errlen, "cannot add a sample: %s",
				 rc == -ENOMEM ? "out of memory" : "profile too large");
			return rc;
		}
	}
	p->samples[id].count += count;
	p->samples[id].nanos += nanos;
	return 0;
}

int mr_profile_sample_add(mr_profile *p, int32_t pid, const char *comm, const uint32_t *frames,
			  uint32_t depth, uint64_t count, uint64_t nanos, char *err, size_t errlen)
{
	const struct mr_sample_thread whole = { .tid = 0 };

	return mr_profile_thread_sample_add(p, pid, comm, &whole, frames, depth, count, nanos, err, errlen);
}

uint32_t mr_profile_sample_count(const mr_profile *p)
{
	return p ? (uint32_t)p->nsamples : 0;
}

const struct mr_sample *mr_profile_samples(const mr_profile *p)
{
	return p ? p->samples : NULL;
}

const uint32_t *mr_profile_stack_frames(const mr_profile *p)
{
	return p ? p->stack : NULL;
}
