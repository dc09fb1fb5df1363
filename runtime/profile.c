/* profile.c - the profile data structure: interned strings, modules and
 * frames, and the accessors Lua reads (samples live in profile_samples.c). */
#include <errno.h>
#include <stdlib.h>

#include "growarray.h"
#include "profile_data.h"

struct module_key {
	const struct mr_profile *p;
	struct mr_module m;
};

struct frame_key {
	const struct mr_profile *p;
	const struct mr_frame *f;
};

static uint32_t module_hash(const struct mr_module *m)
{
	return hash_finish(hash_word(hash_word(HASH_SEED, m->path), m->build_id));
}

static int module_equal(const void *ctx, uint32_t id)
{
	const struct module_key *k = ctx;
	const struct mr_module *m = &k->p->modules[id];

	return m->path == k->m.path && m->build_id == k->m.build_id;
}

static uint32_t module_append(struct mr_profile *p, const struct mr_module *m, uint32_t hash)
{
	struct mr_module *modules;

	if (p->nmodules >= HASHIDX_NONE)
		return HASHIDX_NONE;
	modules = grow_array(p->modules, &p->modules_cap, p->nmodules + 1, sizeof(*modules));
	if (!modules)
		return HASHIDX_NONE;
	p->modules = modules;
	if (hashidx_insert(&p->module_index, hash, (uint32_t)p->nmodules))
		return HASHIDX_NONE;
	p->modules[p->nmodules] = *m;
	return (uint32_t)p->nmodules++;
}

static uint32_t module_intern(struct mr_profile *p, const struct mr_module *m)
{
	struct module_key key = { .p = p, .m = *m };
	uint32_t hash = module_hash(m);
	uint32_t id = hashidx_find(&p->module_index, hash, module_equal, &key);

	if (id != HASHIDX_NONE)
		return id;
	return module_append(p, m, hash);
}

static uint32_t frame_hash(const struct mr_frame *f)
{
	uint64_t h = hash_word(HASH_SEED, f->name);

	h = hash_word(h, f->module);
	h = hash_word(h, f->address);
	h = hash_word(h, f->kind);
	return hash_finish(hash_word(h, f->resolved));
}

static int frame_equal(const void *ctx, uint32_t id)
{
	const struct frame_key *k = ctx;
	const struct mr_frame *a = &k->p->frames[id];
	const struct mr_frame *b = k->f;

	return a->name == b->name && a->module == b->module && a->address == b->address &&
	       a->kind == b->kind && a->resolved == b->resolved;
}

static uint32_t frame_append(struct mr_profile *p, const struct mr_frame *f, uint32_t hash)
{
	struct mr_frame *frames;

	if (p->nframes >= HASHIDX_NONE)
		return HASHIDX_NONE;
	frames = grow_array(p->frames, &p->frames_cap, p->nframes + 1, sizeof(*frames));
	if (!frames)
		return HASHIDX_NONE;
	p->frames = frames;
	if (hashidx_insert(&p->frame_index, hash, (uint32_t)p->nframes))
		return HASHIDX_NONE;
	p->frames[p->nframes] = *f;
	return (uint32_t)p->nframes++;
}

mr_profile *mr_profile_new(void)
{
	struct mr_module none = { 0, 0 };
	mr_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (intern_init(&p->strings) || module_intern(p, &none) != 0) {
		mr_profile_free(p);
		return NULL;
	}
	return p;
}

void mr_profile_free(mr_profile *p)
{
	if (!p)
		return;
	intern_free(&p->strings);
	free(p->modules);
	hashidx_free(&p->module_index);
	free(p->frames);
	hashidx_free(&p->frame_index);
	free(p->samples);
	hashidx_free(&p->sample_index);
	free(p->stack);
	free(p);
}

uint32_t mr_profile_string_add(mr_profile *p, const char *s)
{
	if (!p)
		return HASHIDX_NONE;
	return intern_add(&p->strings, s);
}

const char *mr_profile_string(const mr_profile *p, uint32_t id)
{
	if (!p)
		return "";
	return intern_get(&p->strings, id);
}

uint32_t mr_profile_module_add(mr_profile *p, const char *path, const char *build_id)
{
	struct mr_module m;

	if (!p)
		return HASHIDX_NONE;
	m.path = intern_add(&p->strings, path);
	m.build_id = intern_add(&p->strings, build_id);
	if (m.path == HASHIDX_NONE || m.build_id == HASHIDX_NONE)
		return HASHIDX_NONE;
	return module_intern(p, &m);
}

uint32_t mr_profile_frame_add(mr_profile *p, const struct mr_frame *f)
{
	struct frame_key key = { .p = p, .f = f };
	uint32_t hash;
	uint32_t id;

	if (!p || !f || f->name >= p->strings.count || f->module >= p->nmodules)
		return HASHIDX_NONE;
	hash = frame_hash(f);
	id = hashidx_find(&p->frame_index, hash, frame_equal, &key);
	if (id != HASHIDX_NONE)
		return id;
	return frame_append(p, f, hash);
}

uint32_t mr_profile_frame_count(const mr_profile *p)
{
	return p ? (uint32_t)p->nframes : 0;
}

const struct mr_frame *mr_profile_frames(const mr_profile *p)
{
	return p ? p->frames : NULL;
}

uint32_t mr_profile_module_count(const mr_profile *p)
{
	return p ? (uint32_t)p->nmodules : 0;
}

const struct mr_module *mr_profile_modules(const mr_profile *p)
{
	return p ? p->modules : NULL;
}
