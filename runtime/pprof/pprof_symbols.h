/* pprof_symbols.h - the symbol side of a pprof message built from an
 * mr_profile: one Mapping per module (id = module id), first the main one
 * when the profile names it (a profile of many processes), one Location per
 * frame (id = frame index + 1) and one Function per distinct (name, file).
 * When some sample has no frame, one more Location, "[unknown]", for it to
 * end at: so that its value falls under a function as well.
 * The process is no frame: samples carry it in labels (pprof_samples.h). */
#ifndef MR_PPROF_PPROF_SYMBOLS_H
#define MR_PPROF_PPROF_SYMBOLS_H

#include "api_test.h"
#include "base/hash_index.h"
#include "base/intern.h"
#include "profile.pb-c.h"

struct mr_pprof_symbols {
	Pprof__Mapping *mappings;
	Pprof__Mapping **mapping_ptrs;
	size_t nmappings;

	Pprof__Function *functions;
	Pprof__Function **function_ptrs;
	size_t nfunctions;
	struct mr_hash_index function_index;

	Pprof__Location *locations;
	Pprof__Location **location_ptrs;
	Pprof__Line *lines;
	Pprof__Line **line_ptrs;
	size_t nlocations;
	uint64_t unknown_location; /* the id of "[unknown]", 0 when not needed */
};

/* Builds everything above, adding names to strings; main_file names the
 * main mapping (pprof's "File:"), NULL to rank the sampled executable first.
 * Returns 0 or -ENOMEM; call mr_pprof_symbols_free() either way. */
int mr_pprof_symbols_build(struct mr_pprof_symbols *s, struct mr_intern *strings, const mr_profile *p,
			   const char *main_file);
void mr_pprof_symbols_free(struct mr_pprof_symbols *s);

#endif
