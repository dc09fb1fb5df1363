/* cpu_clock.c - opens one PERF_COUNT_SW_CPU_CLOCK event per online CPU
 * (hardware PMUs are often absent in VMs) and links the BPF program to each. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "base/log.h"
#include "profiler/cpu_clock.h"
#include "profiler/online_cpus.h"

#define MAX_CPUS 4096

struct mr_profiler_cpu_clock {
	int nlinks;
	struct bpf_link *links[];
};

static int open_cpu_clock(int cpu, unsigned freq)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = freq;
	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int attach_cpu(struct mr_profiler_cpu_clock *s, struct bpf_program *prog, int cpu, unsigned freq,
		      char *err, size_t errlen)
{
	struct bpf_link *link;
	int fd = open_cpu_clock(cpu, freq), e;

	if (fd < 0) {
		e = -errno;
		snprintf(err, errlen, "perf_event_open(cpu-clock, cpu %d, %u Hz): %s", cpu, freq,
			 strerror(-e));
		return e;
	}
	link = bpf_program__attach_perf_event(prog, fd);
	if (!link) {
		e = -errno;
		close(fd);
		snprintf(err, errlen, "attaching the sampler to cpu %d: %s", cpu, strerror(-e));
		return e;
	}
	s->links[s->nlinks++] = link;
	return 0;
}

struct mr_profiler_cpu_clock *mr_profiler_cpu_clock_attach(struct bpf_program *prog, unsigned freq, char *err,
							   size_t errlen)
{
	int *cpus = calloc(MAX_CPUS, sizeof(int)), n, rc = -ENOMEM;
	struct mr_profiler_cpu_clock *s = NULL;

	if (!cpus)
		return mr_fail_null(mr_error(err, errlen, -ENOMEM, "out of memory"));
	n = mr_profiler_online_cpus(cpus, MAX_CPUS);
	if (n <= 0) {
		rc = n ? n : -ENODATA;
		snprintf(err, errlen, "cannot read the online CPU list: %s", strerror(-rc));
		goto out;
	}
	s = calloc(1, sizeof(*s) + (size_t)n * sizeof(s->links[0]));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		rc = attach_cpu(s, prog, cpus[i], freq, err, errlen);
		if (rc != 0) {
			mr_profiler_cpu_clock_detach(s);
			s = NULL;
			break;
		}
	}
out:
	free(cpus);
	return s ? s : mr_fail_null(rc);
}

void mr_profiler_cpu_clock_detach(struct mr_profiler_cpu_clock *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	free(s);
}
