/* pprof_samples.h - the samples of a pprof message built from an mr_profile:
 * values [count, nanos], locations leaf first (a sample with no frame has
 * only the "[unknown]" location, pprof_symbols.h), and labels "pid" (number) and
 * "comm" (string), plus "tid" (number) and "thread" (its name) in per-thread
 * profiles. The process is a label, not a frame. */
#ifndef MR_PPROF_PPROF_SAMPLES_H
#define MR_PPROF_PPROF_SAMPLES_H

#include "api_test.h"
#include "base/intern.h"
#include "profile.pb-c.h"

struct mr_pprof_samples {
	Pprof__Sample *samples;
	Pprof__Sample **sample_ptrs;
	size_t nsamples;
	uint64_t *location_ids; /* every sample's location ids, back to back */
	int64_t *values;        /* two per sample */
	Pprof__Label *labels;   /* up to four per sample */
	Pprof__Label **label_ptrs;
};

/* unknown_location: the location id a sample with no frame gets. Returns 0
 * or -ENOMEM; call mr_pprof_samples_free() either way. */
int mr_pprof_samples_build(struct mr_pprof_samples *s, struct mr_intern *strings, const mr_profile *p,
			   uint64_t unknown_location);
void mr_pprof_samples_free(struct mr_pprof_samples *s);

#endif
