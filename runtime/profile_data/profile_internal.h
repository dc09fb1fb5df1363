/* profile_internal.h - the layout of struct mr_profile, shared by the files
 * that implement it (profile.c: strings, modules, frames; profile_samples.c). */
#ifndef MR_PROFILE_PROFILE_INTERNAL_H
#define MR_PROFILE_PROFILE_INTERNAL_H

#include "api_test.h"
#include "base/hash_index.h"
#include "base/intern.h"

struct mr_profile {
	struct mr_intern strings;

	struct mr_module *modules; /* modules[0] is "none" */
	size_t nmodules;
	size_t modules_cap;
	struct mr_hash_index module_index;

	struct mr_frame *frames;
	size_t nframes;
	size_t frames_cap;
	struct mr_hash_index frame_index;

	struct mr_sample *samples;
	size_t nsamples;
	size_t samples_cap;
	struct mr_hash_index sample_index;

	uint32_t *stack; /* frame ids of every sample's stack, leaf first */
	size_t nstack;
	size_t stack_cap;
};

#endif
