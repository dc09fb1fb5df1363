/* pid_tally.h - events counted per pid in a small fixed hash table: the
 * C-side work of the event-path benchmark, comparable to a Lua table. */
#ifndef MR_PID_TALLY_H
#define MR_PID_TALLY_H

#include <stdint.h>

struct mr_pid_tally;

struct mr_pid_tally *mr_pid_tally_new(void);
void mr_pid_tally_free(struct mr_pid_tally *t);
/* Counts one event of pid (into a shared overflow slot once the table is full). */
void mr_pid_tally_add(struct mr_pid_tally *t, uint32_t pid);

#endif
