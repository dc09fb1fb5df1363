/* profile.c - the profile data structure: interned strings, modules and
 * frames, and the accessors Lua reads (samples live in profile_samples.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/grow_array.h"
#include "profile_data/profile_internal.h"
#include "script_host/script_owner.h"

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
	return mr_hash_finish(mr_hash_word(mr_hash_word(MR_HASH_SEED, m->path), m->build_id));
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

	if (p->nmodules >= MR_HASH_NONE)
		return MR_HASH_NONE;
	modules = mr_grow_array(p->modules, &p->modules_cap, p->nmodules + 1, sizeof(*modules));
	if (!modules)
		return MR_HASH_NONE;
	p->modules = modules;
	if (mr_hash_index_insert(&p->module_index, hash, (uint32_t)p->nmodules))
		return MR_HASH_NONE;
	p->modules[p->nmodules] = *m;
	return (uint32_t)p->nmodules++;
}

static uint32_t module_intern(struct mr_profile *p, const struct mr_module *m)
{
	struct module_key key = { .p = p, .m = *m };
	uint32_t hash = module_hash(m);
	uint32_t id = mr_hash_index_find(&p->module_index, hash, module_equal, &key);

	if (id != MR_HASH_NONE)
		return id;
	return module_append(p, m, hash);
}

static uint32_t frame_hash(const struct mr_frame *f)
{
	uint64_t h = mr_hash_word(MR_HASH_SEED, f->name);

	h = mr_hash_word(h, f->module);
	h = mr_hash_word(h, f->address);
	h = mr_hash_word(h, f->kind);
	return mr_hash_finish(mr_hash_word(h, f->resolved));
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

	if (p->nframes >= MR_HASH_NONE)
		return MR_HASH_NONE;
	frames = mr_grow_array(p->frames, &p->frames_cap, p->nframes + 1, sizeof(*frames));
	if (!frames)
		return MR_HASH_NONE;
	p->frames = frames;
	if (mr_hash_index_insert(&p->frame_index, hash, (uint32_t)p->nframes))
		return MR_HASH_NONE;
	p->frames[p->nframes] = *f;
	return (uint32_t)p->nframes++;
}

static void free_owned(void *obj)
{
	mr_profile_free(obj);
}

/* A script's profile is tracked as its own: a script interrupted past its
 * budget has its Lua state abandoned, whose finalizer would have freed it. */
mr_profile *mr_profile_new(char *err, size_t errlen)
{
	struct mr_module none = { 0 };
	mr_profile *p = calloc(1, sizeof(*p));

	if (p && (mr_intern_init(&p->strings) || module_intern(p, &none) != 0 ||
		  mr_script_owner_add(p, free_owned) != 0)) {
		mr_profile_free(p);
		p = NULL;
	}
	if (!p)
		snprintf(err, errlen, "out of memory for a profile");
	return p;
}

void mr_profile_free(mr_profile *p)
{
	if (!p)
		return;
	mr_script_owner_remove(p);
	mr_intern_free(&p->strings);
	free(p->modules);
	mr_hash_index_free(&p->module_index);
	free(p->frames);
	mr_hash_index_free(&p->frame_index);
	free(p->samples);
	mr_hash_index_free(&p->sample_index);
	free(p->stack);
	free(p);
}

/* Stores id, or says why there is none (bad arguments or no memory). */
static int profile_result(uint32_t id, uint32_t *out, const char *what, char *err, size_t errlen)
{
	if (id != MR_HASH_NONE) {
		*out = id;
		return 0;
	}
	snprintf(err, errlen, "cannot add a %s to the profile: bad arguments or out of memory", what);
	return -ENOMEM;
}

int mr_profile_string_add(mr_profile *p, const char *s, uint32_t *id, char *err, size_t errlen)
{
	return profile_result(p ? mr_intern_add(&p->strings, s) : MR_HASH_NONE, id, "string", err, errlen);
}

const char *mr_profile_string(const mr_profile *p, uint32_t id)
{
	if (!p)
		return "";
	return mr_intern_get(&p->strings, id);
}

static uint32_t module_add(mr_profile *p, const char *path, const char *build_id, int32_t executable)
{
	struct mr_module m = { 0 };
	uint32_t id;

	if (!p)
		return MR_HASH_NONE;
	m.path = mr_intern_add(&p->strings, path);
	m.build_id = mr_intern_add(&p->strings, build_id);
	if (m.path == MR_HASH_NONE || m.build_id == MR_HASH_NONE)
		return MR_HASH_NONE;
	id = module_intern(p, &m);
	if (id != MR_HASH_NONE && executable)
		p->modules[id].executable = 1;
	return id;
}

int mr_profile_module_add(mr_profile *p, const char *path, const char *build_id, int32_t executable,
			  uint32_t *id, char *err, size_t errlen)
{
	return profile_result(module_add(p, path, build_id, executable), id, "module", err, errlen);
}

static uint32_t frame_add(mr_profile *p, const struct mr_frame *f)
{
	struct frame_key key = { .p = p, .f = f };
	uint32_t hash;
	uint32_t id;

	if (!p || !f || f->name >= p->strings.count || f->module >= p->nmodules)
		return MR_HASH_NONE;
	hash = frame_hash(f);
	id = mr_hash_index_find(&p->frame_index, hash, frame_equal, &key);
	if (id != MR_HASH_NONE)
		return id;
	return frame_append(p, f, hash);
}

int mr_profile_frame_add(mr_profile *p, const struct mr_frame *f, uint32_t *id, char *err, size_t errlen)
{
	return profile_result(frame_add(p, f), id, "frame", err, errlen);
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
