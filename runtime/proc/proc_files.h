/* proc_files.h - what the runtime itself reads of a process (the api.h
 * functions are for Lua). */
#ifndef MR_PROC_PROC_FILES_H
#define MR_PROC_PROC_FILES_H

#include <stddef.h>
#include <stdint.h>

/* The process name of pid (its comm) in buf; the length, or a negative errno. */
int32_t mr_proc_comm(int32_t pid, char *buf, size_t len);

#endif
