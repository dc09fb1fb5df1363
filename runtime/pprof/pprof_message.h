/* pprof_message.h - a whole pprof Profile message built from an mr_profile,
 * with its own string table; the memory it points to is owned here. */
#ifndef MR_PPROF_PPROF_MESSAGE_H
#define MR_PPROF_PPROF_MESSAGE_H

#include "api_test.h"
#include "base/intern.h"
#include "pprof/pprof_samples.h"
#include "pprof/pprof_symbols.h"
#include "profile.pb-c.h"

struct mr_pprof_options {
	int off_cpu;        /* sample types off_cpu/nanoseconds instead of cpu/ */
	uint64_t period_ns; /* sampling period of on-CPU profiles */
	uint64_t duration_ns;
	int64_t time_ns;       /* collection time, nanoseconds since the Unix epoch */
	const char *main_file; /* the main mapping's name; NULL: the sampled executable */
};

struct mr_pprof_message {
	Pprof__Profile profile;
	Pprof__ValueType types[2]; /* samples/count, then the time type */
	Pprof__ValueType *type_ptrs[2];
	struct mr_intern strings;
	char **string_table;
	struct mr_pprof_symbols symbols;
	struct mr_pprof_samples samples;
};

/* Returns 0 or -ENOMEM; call mr_pprof_message_free() either way. */
int mr_pprof_message_build(struct mr_pprof_message *m, const mr_profile *p, const struct mr_pprof_options *o);
void mr_pprof_message_free(struct mr_pprof_message *m);

#endif
