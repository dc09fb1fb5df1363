/* cpu_sampling.h - a perf_event BPF program attached to the software
 * cpu-clock of every online CPU, in frequency mode. */
#ifndef MR_CPU_SAMPLING_H
#define MR_CPU_SAMPLING_H

#include <stddef.h>

struct bpf_program;
struct mr_cpu_sampling;

/* Attaches prog at freq Hz on each online CPU. On failure returns NULL and
 * writes why into err. */
struct mr_cpu_sampling *mr_cpu_sampling_attach(struct bpf_program *prog, unsigned freq, char *err,
					       size_t errlen);
/* Detaches and closes every perf event. */
void mr_cpu_sampling_detach(struct mr_cpu_sampling *s);

#endif
