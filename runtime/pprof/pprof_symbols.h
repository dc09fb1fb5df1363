/* pprof_symbols.h - the symbol side of a pprof message built from an
 * mr_profile: one Mapping per module (id = module id), one Location per frame
 * (id = frame index + 1) plus one per process name (a synthetic root frame
 * named after the comm), and one Function per distinct (name, file). */
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

	uint64_t *comm_location; /* by profile string id of a comm: its root location id */
	size_t ncomms;           /* entries in comm_location */
};

/* Builds everything above, adding names to strings. Returns 0 or -ENOMEM;
 * call mr_pprof_symbols_free() either way. */
int mr_pprof_symbols_build(struct mr_pprof_symbols *s, struct mr_intern *strings, const mr_profile *p);
void mr_pprof_symbols_free(struct mr_pprof_symbols *s);

#endif
