/* cpu_clock.h - a perf_event BPF program attached to the software
 * cpu-clock of every online CPU, in frequency mode. */
#ifndef MR_PROFILER_CPU_CLOCK_H
#define MR_PROFILER_CPU_CLOCK_H

#include <stddef.h>

struct bpf_program;
struct mr_profiler_cpu_clock;

/* Attaches prog at freq Hz on each online CPU. On failure returns NULL and
 * writes why into err. */
struct mr_profiler_cpu_clock *mr_profiler_cpu_clock_attach(struct bpf_program *prog, unsigned freq, char *err,
							   size_t errlen);
/* Detaches and closes every perf event. */
void mr_profiler_cpu_clock_detach(struct mr_profiler_cpu_clock *s);

#endif
