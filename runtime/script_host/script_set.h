/* script_set.h - the agent's set of scripts: loading at start, atomic hot reload
 * with a canary run, delivery of event batches, and the metrics about them. */
#ifndef MR_SCRIPT_HOST_SCRIPT_SET_H
#define MR_SCRIPT_HOST_SCRIPT_SET_H

#include <stddef.h>
#include <stdint.h>

#include "api_test.h"

struct event_base;
struct mr_script;

#define MR_SCRIPT_RECENT_MAX 16
#define MR_SCRIPT_RECORD_MAX 64

struct mr_script_recent {
	unsigned char records[MR_SCRIPT_RECENT_MAX][MR_SCRIPT_RECORD_MAX];
	uint32_t count;
	uint32_t next;
	uint32_t size;
};

struct mr_script_set {
	struct event_base *base;
	mr_metrics *metrics;
	mr_data_plane *dp; /* where the scripts' network verdicts go */
	char *package_path;
	char *scripts_dir;
	char *bundled_skip;
	char *user_dir;
	char *config_name; /* what agent.config() reads, or NULL */
	char *config_text;
	unsigned budget_ms;
	size_t memory_limit; /* bytes, each script's unless it sets its own */
	int strict;
	int unsafe_scripts;
	struct mr_script **scripts;
	size_t nscripts;
	struct mr_script_recent recent[MR_STREAM_COUNT]; /* copies of recent events: the canary's input */
	int last_reload_ok;   /* of the last reload, or of the first start before any */
	char last_error[512]; /* its reason when it failed */
	uint64_t reloads;     /* reloads tried since the start */
};

struct mr_script_set *mr_script_set_new(struct event_base *base, mr_metrics *metrics, mr_data_plane *dp,
					const struct mr_agent_opts *o);
void mr_script_set_free(struct mr_script_set *h);
/* First load: every script that loads is started; the others are reported
 * and kept, disabled. -1 with the reason in err when the scripts cannot be
 * listed, or, strict, when one did not start. Strict, every script is
 * compiled first, and none runs unless all compile. */
int mr_script_set_start(struct mr_script_set *h, char *err, size_t errlen);
/* Loads every script anew, tries each on a canary batch, and swaps the whole
 * set in only if all succeed; otherwise the running set stays. 0 or -1. */
int mr_script_set_reload(struct mr_script_set *h);
/* Runs every script's on_stop hooks; returns 1 when any script had some. */
int mr_script_set_stop(struct mr_script_set *h);
/* Hands a batch to every script subscribed to the stream: n records, size
 * bytes each, or for a stream of variable-size records (size 0) n records
 * each after its 8-byte prefix (see mr_data_plane_peek_bytes). */
void mr_script_set_deliver(struct mr_script_set *h, uint32_t stream, const void *records, uint32_t n,
			   uint32_t size);
/* Adds v to moonrover_lua_states_abandoned_total. */
void mr_script_set_count_abandoned(struct mr_script_set *h, double v);
/* Adds v to a per-script counter such as moonrover_lua_errors_total. */
void mr_script_set_count(struct mr_script_set *h, const char *metric, const char *help, const char *script,
			 double v);

#endif
