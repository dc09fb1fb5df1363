/* pprof_symbols.c - mappings, locations and functions of a pprof message
 * (see pprof_symbols.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "pprof/pprof_symbols.h"

struct function_key {
	const Pprof__Function *functions;
	int64_t name;
	int64_t filename;
};

static int function_equal(const void *ctx, uint32_t id)
{
	const struct function_key *k = ctx;

	return k->functions[id].name == k->name && k->functions[id].filename == k->filename;
}

/* Returns the id of the function (name, filename), adding it when new; 0
 * when out of memory. The array has room for one function per location. */
static uint64_t function_id(struct mr_pprof_symbols *s, int64_t name, int64_t filename)
{
	struct function_key key = { .functions = s->functions, .name = name, .filename = filename };
	uint32_t hash = mr_hash_finish(
		mr_hash_word(mr_hash_word(MR_HASH_SEED, (uint64_t)name), (uint64_t)filename));
	uint32_t idx = mr_hash_index_find(&s->function_index, hash, function_equal, &key);
	Pprof__Function *f;

	if (idx != MR_HASH_NONE)
		return idx + 1;
	if (mr_hash_index_insert(&s->function_index, hash, (uint32_t)s->nfunctions))
		return 0;
	f = &s->functions[s->nfunctions];
	pprof__function__init(f);
	f->id = s->nfunctions + 1;
	f->name = name;
	f->system_name = name;
	f->filename = filename;
	s->function_ptrs[s->nfunctions++] = f;
	return f->id;
}

/* Whether some sample of p has no frame. */
static int has_empty_sample(const mr_profile *p)
{
	const struct mr_sample *samples = mr_profile_samples(p);
	size_t n = mr_profile_sample_count(p);

	for (size_t i = 0; i < n; i++)
		if (samples[i].depth == 0)
			return 1;
	return 0;
}

/* Room for one mapping per module but "none", plus the main one when named,
 * and one location (and at most one function) per frame, plus "[unknown]". */
static int allocate(struct mr_pprof_symbols *s, const mr_profile *p, const char *main_file)
{
	size_t nmodules = mr_profile_module_count(p);

	s->nmappings = (nmodules ? nmodules - 1 : 0) + (main_file != NULL);
	s->nlocations = mr_profile_frame_count(p);
	if (has_empty_sample(p))
		s->unknown_location = ++s->nlocations;
	s->mappings = mr_zeroed_array(s->nmappings, sizeof(*s->mappings));
	s->mapping_ptrs = mr_zeroed_array(s->nmappings, sizeof(*s->mapping_ptrs));
	s->functions = mr_zeroed_array(s->nlocations, sizeof(*s->functions));
	s->function_ptrs = mr_zeroed_array(s->nlocations, sizeof(*s->function_ptrs));
	s->locations = mr_zeroed_array(s->nlocations, sizeof(*s->locations));
	s->location_ptrs = mr_zeroed_array(s->nlocations, sizeof(*s->location_ptrs));
	s->lines = mr_zeroed_array(s->nlocations, sizeof(*s->lines));
	s->line_ptrs = mr_zeroed_array(s->nlocations, sizeof(*s->line_ptrs));
	if (!s->mappings || !s->mapping_ptrs || !s->functions || !s->function_ptrs || !s->locations ||
	    !s->location_ptrs || !s->lines || !s->line_ptrs)
		return -ENOMEM;
	return 0;
}

/* pprof readers take the first mapping for the profile's main binary
 * ("File:" in `go tool pprof`): executables first, the kernel last. */
static int mapping_rank(const mr_profile *p, uint64_t id)
{
	const struct mr_module *m = &mr_profile_modules(p)[id];

	if (m->executable)
		return 0;
	return strcmp(mr_profile_string(p, m->path), MR_KERNEL_MODULE) == 0 ? 2 : 1;
}

static void order_mappings(struct mr_pprof_symbols *s, const mr_profile *p, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		Pprof__Mapping *m = s->mapping_ptrs[i];
		int rank = mapping_rank(p, m->id);
		size_t j = i;

		for (; j > 0 && mapping_rank(p, s->mapping_ptrs[j - 1]->id) > rank; j--)
			s->mapping_ptrs[j] = s->mapping_ptrs[j - 1];
		s->mapping_ptrs[j] = m;
	}
}

/* The main mapping of a profile of many processes: named main_file, holding
 * no address, with the id after the modules', put first. */
static int add_main_mapping(struct mr_pprof_symbols *s, struct mr_intern *strings, const char *main_file)
{
	size_t last = s->nmappings - 1;
	Pprof__Mapping *m = &s->mappings[last];
	uint32_t file = mr_intern_add(strings, main_file);

	if (file == MR_HASH_NONE)
		return -ENOMEM;
	pprof__mapping__init(m);
	m->id = last + 1;
	m->filename = file;
	memmove(&s->mapping_ptrs[1], &s->mapping_ptrs[0], last * sizeof(*s->mapping_ptrs));
	s->mapping_ptrs[0] = m;
	return 0;
}

/* One mapping per module but "none": the file and build id as named, and an
 * address range from 0 past the highest frame address seen in it. */
static int build_mappings(struct mr_pprof_symbols *s, struct mr_intern *strings, const mr_profile *p,
			  const char *main_file)
{
	const struct mr_module *modules = mr_profile_modules(p);
	const struct mr_frame *frames = mr_profile_frames(p);
	uint32_t nframes = mr_profile_frame_count(p);
	size_t nmodule_mappings = s->nmappings - (main_file != NULL);
	uint32_t i;

	for (i = 0; i < nmodule_mappings; i++) {
		Pprof__Mapping *m = &s->mappings[i];
		uint32_t file = mr_intern_add(strings, mr_profile_string(p, modules[i + 1].path));
		uint32_t build_id = mr_intern_add(strings, mr_profile_string(p, modules[i + 1].build_id));

		if (file == MR_HASH_NONE || build_id == MR_HASH_NONE)
			return -ENOMEM;
		pprof__mapping__init(m);
		m->id = i + 1;
		m->memory_limit = 1;
		m->filename = file;
		m->build_id = build_id;
		m->has_functions = 1;
		s->mapping_ptrs[i] = m;
	}
	for (i = 0; i < nframes; i++) {
		Pprof__Mapping *m = frames[i].module ? &s->mappings[frames[i].module - 1] : NULL;

		if (m && frames[i].address >= m->memory_limit)
			m->memory_limit = frames[i].address == UINT64_MAX ? UINT64_MAX
									  : frames[i].address + 1;
	}
	order_mappings(s, p, nmodule_mappings);
	return main_file ? add_main_mapping(s, strings, main_file) : 0;
}

static const char *name_or_unknown(const char *text)
{
	return text[0] ? text : "[unknown]";
}

/* Fills location idx (id idx + 1) with one line calling function (name, file). */
static int add_location(struct mr_pprof_symbols *s, size_t idx, int64_t name, int64_t file)
{
	Pprof__Location *loc = &s->locations[idx];
	Pprof__Line *line = &s->lines[idx];

	pprof__location__init(loc);
	pprof__line__init(line);
	line->function_id = function_id(s, name, file);
	if (!line->function_id)
		return -ENOMEM;
	loc->id = idx + 1;
	s->line_ptrs[idx] = line;
	loc->n_line = 1;
	loc->line = &s->line_ptrs[idx];
	s->location_ptrs[idx] = loc;
	return 0;
}

static int build_frame_locations(struct mr_pprof_symbols *s, struct mr_intern *strings, const mr_profile *p)
{
	const struct mr_frame *frames = mr_profile_frames(p);
	uint32_t nframes = mr_profile_frame_count(p);
	uint32_t i;

	for (i = 0; i < nframes; i++) {
		uint32_t name = mr_intern_add(strings, name_or_unknown(mr_profile_string(p, frames[i].name)));
		int64_t file = frames[i].module ? s->mappings[frames[i].module - 1].filename : 0;

		if (name == MR_HASH_NONE || add_location(s, i, name, file))
			return -ENOMEM;
		s->locations[i].mapping_id = frames[i].module;
		s->locations[i].address = frames[i].address;
	}
	if (s->unknown_location) {
		uint32_t name = mr_intern_add(strings, "[unknown]");

		if (name == MR_HASH_NONE || add_location(s, s->unknown_location - 1, name, 0))
			return -ENOMEM;
	}
	return 0;
}

int mr_pprof_symbols_build(struct mr_pprof_symbols *s, struct mr_intern *strings, const mr_profile *p,
			   const char *main_file)
{
	int err;

	memset(s, 0, sizeof(*s));
	err = allocate(s, p, main_file);
	if (!err)
		err = build_mappings(s, strings, p, main_file);
	if (!err)
		err = build_frame_locations(s, strings, p);
	return err;
}

void mr_pprof_symbols_free(struct mr_pprof_symbols *s)
{
	free(s->mappings);
	free(s->mapping_ptrs);
	free(s->functions);
	free(s->function_ptrs);
	mr_hash_index_free(&s->function_index);
	free(s->locations);
	free(s->location_ptrs);
	free(s->lines);
	free(s->line_ptrs);
	memset(s, 0, sizeof(*s));
}
