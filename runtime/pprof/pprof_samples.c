/* pprof_samples.c - samples of a pprof message (see pprof_samples.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "pprof/pprof_samples.h"

enum { VALUES_PER_SAMPLE = 2, LABELS_PER_SAMPLE = 4 };

/* What filling one sample needs besides the output. */
struct sample_input {
	struct mr_intern *strings;
	const mr_profile *p;
	int64_t pid_key; /* string ids of the label keys */
	int64_t comm_key;
	int64_t tid_key;
	int64_t thread_key;
	uint64_t unknown_location; /* the location of a sample with no frame */
	size_t next_location;      /* where the next sample's location ids start */
};

static int allocate(struct mr_pprof_samples *s, const mr_profile *p)
{
	const struct mr_sample *samples = mr_profile_samples(p);
	size_t nlocations = 0;
	size_t i;

	s->nsamples = mr_profile_sample_count(p);
	for (i = 0; i < s->nsamples; i++)
		nlocations += samples[i].depth ? samples[i].depth : 1;
	s->samples = mr_zeroed_array(s->nsamples, sizeof(*s->samples));
	s->sample_ptrs = mr_zeroed_array(s->nsamples, sizeof(*s->sample_ptrs));
	s->location_ids = mr_zeroed_array(nlocations, sizeof(*s->location_ids));
	s->values = mr_zeroed_array(s->nsamples * VALUES_PER_SAMPLE, sizeof(*s->values));
	s->labels = mr_zeroed_array(s->nsamples * LABELS_PER_SAMPLE, sizeof(*s->labels));
	s->label_ptrs = mr_zeroed_array(s->nsamples * LABELS_PER_SAMPLE, sizeof(*s->label_ptrs));
	if (!s->samples || !s->sample_ptrs || !s->location_ids || !s->values || !s->labels || !s->label_ptrs)
		return -ENOMEM;
	return 0;
}

/* Sets the next label of sample i: a number, or a string when str is not 0. */
static void add_label(struct mr_pprof_samples *s, size_t i, int64_t key, int64_t num, int64_t str)
{
	size_t slot = i * LABELS_PER_SAMPLE + s->samples[i].n_label++;
	Pprof__Label *label = &s->labels[slot];

	pprof__label__init(label);
	label->key = key;
	label->num = num;
	label->str = str;
	s->label_ptrs[slot] = label;
}

/* Labels "pid" and "comm", and "tid" and "thread" (its name, when known)
 * for a per-thread sample. */
static int set_labels(struct mr_pprof_samples *s, size_t i, const struct sample_input *in,
		      const struct mr_sample *from)
{
	uint32_t comm = mr_intern_add(in->strings, mr_profile_string(in->p, from->comm));
	uint32_t thread = mr_intern_add(in->strings, mr_profile_string(in->p, from->thread));

	if (comm == MR_HASH_NONE || thread == MR_HASH_NONE)
		return -ENOMEM;
	s->samples[i].label = &s->label_ptrs[i * LABELS_PER_SAMPLE];
	add_label(s, i, in->pid_key, from->pid, 0);
	add_label(s, i, in->comm_key, 0, comm);
	if (from->tid)
		add_label(s, i, in->tid_key, from->tid, 0);
	if (from->tid && thread)
		add_label(s, i, in->thread_key, 0, thread);
	return 0;
}

static int set_sample(struct mr_pprof_samples *s, size_t i, struct sample_input *in)
{
	const struct mr_sample *from = &mr_profile_samples(in->p)[i];
	const uint32_t *stack = mr_profile_stack_frames(in->p);
	Pprof__Sample *out = &s->samples[i];
	uint32_t j;

	pprof__sample__init(out);
	out->location_id = &s->location_ids[in->next_location];
	for (j = 0; j < from->depth; j++)
		out->location_id[j] = (uint64_t)stack[from->first + j] + 1;
	out->n_location_id = from->depth;
	if (from->depth == 0) {
		out->location_id[0] = in->unknown_location;
		out->n_location_id = 1;
	}
	in->next_location += out->n_location_id;
	out->value = &s->values[i * VALUES_PER_SAMPLE];
	out->value[0] = (int64_t)from->count;
	out->value[1] = (int64_t)from->nanos;
	out->n_value = VALUES_PER_SAMPLE;
	s->sample_ptrs[i] = out;
	return set_labels(s, i, in, from);
}

int mr_pprof_samples_build(struct mr_pprof_samples *s, struct mr_intern *strings, const mr_profile *p,
			   uint64_t unknown_location)
{
	struct sample_input in = {
		.strings = strings,
		.p = p,
		.pid_key = mr_intern_add(strings, "pid"),
		.comm_key = mr_intern_add(strings, "comm"),
		.tid_key = mr_intern_add(strings, "tid"),
		.thread_key = mr_intern_add(strings, "thread"),
		.unknown_location = unknown_location,
	};
	size_t i;
	int err;

	memset(s, 0, sizeof(*s));
	if (in.pid_key == MR_HASH_NONE || in.comm_key == MR_HASH_NONE || in.tid_key == MR_HASH_NONE ||
	    in.thread_key == MR_HASH_NONE)
		return -ENOMEM;
	err = allocate(s, p);
	for (i = 0; !err && i < s->nsamples; i++)
		err = set_sample(s, i, &in);
	return err;
}

void mr_pprof_samples_free(struct mr_pprof_samples *s)
{
	free(s->samples);
	free(s->sample_ptrs);
	free(s->location_ids);
	free(s->values);
	free(s->labels);
	free(s->label_ptrs);
	memset(s, 0, sizeof(*s));
}
