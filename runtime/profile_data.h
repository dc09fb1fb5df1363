/* profile_data.h - the layout of struct mr_profile, shared by the files that
 * implement it (profile.c: strings, modules, frames; profile_samples.c). */
#ifndef MR_PROFILE_DATA_H
#define MR_PROFILE_DATA_H

#include "api.h"
#include "hashidx.h"
#include "intern.h"

struct mr_profile {
	struct intern strings;

	struct mr_module *modules; /* modules[0] is "none" */
	size_t nmodules;
	size_t modules_cap;
	struct hashidx module_index;

	struct mr_frame *frames;
	size_t nframes;
	size_t frames_cap;
	struct hashidx frame_index;

	struct mr_sample *samples;
	size_t nsamples;
	size_t samples_cap;
	struct hashidx sample_index;

	uint32_t *stack; /* frame ids of every sample's stack, leaf first */
	size_t nstack;
	size_t stack_cap;
};

#endif
