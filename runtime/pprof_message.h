/* pprof_message.h - a whole pprof Profile message built from an mr_profile,
 * with its own string table; the memory it points to is owned here. */
#ifndef MR_PPROF_MESSAGE_H
#define MR_PPROF_MESSAGE_H

#include "api.h"
#include "intern.h"
#include "pprof_samples.h"
#include "pprof_symbols.h"
#include "profile.pb-c.h"

struct pprof_options {
	int off_cpu;          /* sample types off_cpu/nanoseconds instead of cpu/ */
	uint64_t period_ns;   /* sampling period of on-CPU profiles */
	uint64_t duration_ns;
	int64_t time_ns;      /* collection time, nanoseconds since the Unix epoch */
};

struct pprof_message {
	Pprof__Profile profile;
	Pprof__ValueType types[2];        /* samples/count, then the time type */
	Pprof__ValueType *type_ptrs[2];
	struct intern strings;
	char **string_table;
	struct pprof_symbols symbols;
	struct pprof_samples samples;
};

/* Returns 0 or -ENOMEM; call pprof_message_free() either way. */
int pprof_message_build(struct pprof_message *m, const mr_profile *p,
			const struct pprof_options *o);
void pprof_message_free(struct pprof_message *m);

#endif
