/* pprof_message.c - assembles a pprof Profile message (see pprof_message.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "pprof/pprof_message.h"

static int set_value_type(Pprof__ValueType *t, struct mr_intern *strings, const char *type, const char *unit)
{
	uint32_t type_id = mr_intern_add(strings, type);
	uint32_t unit_id = mr_intern_add(strings, unit);

	if (type_id == MR_HASH_NONE || unit_id == MR_HASH_NONE)
		return -ENOMEM;
	pprof__value_type__init(t);
	t->type = type_id;
	t->unit = unit_id;
	return 0;
}

/* Samples count events and time; the period is measured in that time. */
static int set_types(struct mr_pprof_message *m, const struct mr_pprof_options *o)
{
	const char *time_type = o->off_cpu ? "off_cpu" : "cpu";

	if (set_value_type(&m->types[0], &m->strings, "samples", "count") ||
	    set_value_type(&m->types[1], &m->strings, time_type, "nanoseconds"))
		return -ENOMEM;
	m->type_ptrs[0] = &m->types[0];
	m->type_ptrs[1] = &m->types[1];
	m->profile.n_sample_type = 2;
	m->profile.sample_type = m->type_ptrs;
	m->profile.period_type = &m->types[1];
	m->profile.period = o->off_cpu ? 1 : (int64_t)o->period_ns;
	m->profile.duration_nanos = (int64_t)o->duration_ns;
	m->profile.time_nanos = o->time_ns;
	return 0;
}

/* Points the message's string table into the interner: done last, since
 * every add may move the interned text. */
static int set_string_table(struct mr_pprof_message *m)
{
	size_t i;

	m->string_table = mr_zeroed_array(m->strings.count, sizeof(*m->string_table));
	if (!m->string_table)
		return -ENOMEM;
	for (i = 0; i < m->strings.count; i++)
		m->string_table[i] = m->strings.text + m->strings.offsets[i];
	m->profile.n_string_table = m->strings.count;
	m->profile.string_table = m->string_table;
	return 0;
}

static void attach_parts(struct mr_pprof_message *m)
{
	Pprof__Profile *pr = &m->profile;

	pr->n_mapping = m->symbols.nmappings;
	pr->mapping = m->symbols.mapping_ptrs;
	pr->n_location = m->symbols.nlocations;
	pr->location = m->symbols.location_ptrs;
	pr->n_function = m->symbols.nfunctions;
	pr->function = m->symbols.function_ptrs;
	pr->n_sample = m->samples.nsamples;
	pr->sample = m->samples.sample_ptrs;
}

int mr_pprof_message_build(struct mr_pprof_message *m, const mr_profile *p, const struct mr_pprof_options *o)
{
	int err;

	memset(m, 0, sizeof(*m));
	pprof__profile__init(&m->profile);
	err = mr_intern_init(&m->strings);
	if (!err)
		err = set_types(m, o);
	if (!err)
		err = mr_pprof_symbols_build(&m->symbols, &m->strings, p, o->main_file);
	if (!err)
		err = mr_pprof_samples_build(&m->samples, &m->strings, p, m->symbols.unknown_location);
	if (!err)
		err = set_string_table(m);
	if (!err)
		attach_parts(m);
	return err;
}

void mr_pprof_message_free(struct mr_pprof_message *m)
{
	mr_pprof_symbols_free(&m->symbols);
	mr_pprof_samples_free(&m->samples);
	free(m->string_table);
	mr_intern_free(&m->strings);
	memset(m, 0, sizeof(*m));
}
