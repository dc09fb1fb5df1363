/* pid_table.h - a map from process ids to small fixed-size values (a name,
 * a count), on the runtime's hash index. */
#ifndef MR_BASE_PID_TABLE_H
#define MR_BASE_PID_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct mr_pid_table;

/* Every value is value_size bytes, aligned for any type of up to 8-byte
 * alignment. NULL when out of memory. */
struct mr_pid_table *mr_pid_table_new(size_t value_size);
void mr_pid_table_free(struct mr_pid_table *t);
/* The value of pid, or NULL when absent. It moves at the next put. */
void *mr_pid_table_get(const struct mr_pid_table *t, int32_t pid);
/* The value of pid, added zeroed when absent (*added says so); NULL when
 * out of memory. It moves at the next put. */
void *mr_pid_table_put(struct mr_pid_table *t, int32_t pid, int *added);
/* Removes pid (the last record takes its place). 0, or -ENOENT. */
int mr_pid_table_remove(struct mr_pid_table *t, int32_t pid);
size_t mr_pid_table_count(const struct mr_pid_table *t);

#endif
