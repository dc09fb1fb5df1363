/* online_cpus.h - the list of online CPUs, read from sysfs (it may have holes). */
#ifndef MR_PROFILER_ONLINE_CPUS_H
#define MR_PROFILER_ONLINE_CPUS_H

/* Fills cpus (capacity max) with online CPU numbers; returns how many, or a
 * negative errno. */
int mr_profiler_online_cpus(int *cpus, int max);
/* Parses a sysfs CPU list such as "0-3,5,7-8". */
int mr_profiler_parse_cpus(const char *text, int *cpus, int max);

#endif
