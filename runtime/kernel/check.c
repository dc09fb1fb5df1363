/* check.c - `moonrover check`: tries each kernel feature the agent relies on
 * for real (load, attach, trigger, observe) rather than trusting feature
 * probes, which are wrong on some kernels (see docs/architecture.md). */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "api_test.h"
#include "dataplane/data_plane_check.h"
#include "kernel/bpf_errors.h"
#include "kernel/btf.h"
#include "probe.skel.h"
#include "profiler/profiler_internal.h"
#include "kernel/tracefs.h"

#define CAP_SYS_PTRACE_BIT 19
#define CAP_SYS_ADMIN_BIT 21
#define CAP_SYSLOG_BIT 34
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

/* A probe: 1 usable, 0 not, -EPERM when this user may not use it. */
typedef int (*check_fn)(char *detail, size_t len);

const char *mr_kernel_privileges(void)
{
	return MR_KERNEL_PRIVILEGES;
}

/* A probe that failed: -EPERM when rc is a permission error, else 0. */
static int failed(int rc)
{
	return rc == -EPERM || rc == -EACCES ? -EPERM : 0;
}

/* A function for the uprobe check to attach to; noinline keeps it a real symbol. */
__attribute__((noinline, used, visibility("default"))) int mr_kernel_check_uprobe_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static int effective_caps(uint64_t *caps)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	int found = 0;

	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %" SCNx64, caps) == 1;
	fclose(f);
	return found ? 0 : -ENODATA;
}

static const char *yes_no(uint64_t caps, int bit)
{
	return (caps >> bit) & 1 ? "yes" : "no";
}

/* CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON, as the kernel lets it. */
static int check_root(char *detail, size_t len)
{
	uint64_t caps = 0;
	int admin, ok;

	if (effective_caps(&caps) != 0) {
		snprintf(detail, len, "cannot read capabilities from /proc/self/status");
		return 0;
	}
	admin = (caps >> CAP_SYS_ADMIN_BIT) & 1;
	ok = (admin || (((caps >> CAP_BPF_BIT) & 1) && ((caps >> CAP_PERFMON_BIT) & 1))) &&
	     ((caps >> CAP_SYS_PTRACE_BIT) & 1);
	snprintf(detail, len,
		 "uid %u, CAP_BPF %s, CAP_PERFMON %s, CAP_SYS_PTRACE %s, CAP_SYSLOG %s, CAP_SYS_ADMIN %s",
		 geteuid(), yes_no(caps, CAP_BPF_BIT), yes_no(caps, CAP_PERFMON_BIT),
		 yes_no(caps, CAP_SYS_PTRACE_BIT), yes_no(caps, CAP_SYSLOG_BIT),
		 yes_no(caps, CAP_SYS_ADMIN_BIT));
	return ok ? 1 : failed(-EPERM);
}

static int check_btf(char *detail, size_t len)
{
	return mr_kernel_btf_check(detail, len) == 0;
}

static int check_kallsyms(char *detail, size_t len)
{
	char line[512];
	unsigned long long addr = 0;
	FILE *f = fopen("/proc/kallsyms", "re");
	int nonzero = 0;

	if (!f) {
		snprintf(detail, len, "/proc/kallsyms: %s", strerror(errno));
		return 0;
	}
	for (int i = 0; i < 64 && fgets(line, sizeof(line), f); i++)
		nonzero |= sscanf(line, "%llx", &addr) == 1 && addr != 0;
	fclose(f);
	if (nonzero) {
		snprintf(detail, len, "/proc/kallsyms shows addresses");
		return 1;
	}
	snprintf(detail, len, "/proc/kallsyms shows only zero addresses to this user");
	return geteuid() != 0 ? -EPERM : 0;
}

/* Opens probe.bpf.c with only the named program loaded; 0 or -errno. */
static int load_one(const char *prog_name, struct probe_bpf **out, struct bpf_program **prog, char *detail,
		    size_t len)
{
	struct probe_bpf *skel = probe_bpf__open();
	struct bpf_program *p;
	int err;

	if (!skel) {
		err = -errno;
		snprintf(detail, len, "cannot open the probe object: %s", strerror(-err));
		return err;
	}
	skel->rodata->self_tgid = (__u32)getpid();
	*prog = NULL;
	bpf_object__for_each_program(p, skel->obj)
	{
		int mine = strcmp(bpf_program__name(p), prog_name) == 0;

		bpf_program__set_autoload(p, mine);
		if (mine)
			*prog = p;
	}
	err = probe_bpf__load(skel);
	if (err) {
		snprintf(detail, len, "loading a %s program failed: %s", prog_name, strerror(-err));
		probe_bpf__destroy(skel);
		return err;
	}
	*out = skel;
	return 0;
}

static int attach_and_trigger(const char *prog_name, void (*trigger)(void), char *detail, size_t len)
{
	struct bpf_program *prog;
	struct probe_bpf *skel;
	struct bpf_link *link;
	int ok, rc = load_one(prog_name, &skel, &prog, detail, len);

	if (rc)
		return failed(rc);
	link = bpf_program__attach(prog);
	if (!link) {
		rc = -errno;
		snprintf(detail, len, "attaching failed: %s", strerror(-rc));
		probe_bpf__destroy(skel);
		return failed(rc);
	}
	trigger();
	ok = skel->bss->hits > 0;
	snprintf(detail, len, ok ? "loaded, attached and fired" : "attached but never fired");
	bpf_link__destroy(link);
	probe_bpf__destroy(skel);
	return ok;
}

static void call_getppid(void)
{
	for (int i = 0; i < 10; i++)
		syscall(SYS_getppid);
}

static void yield_cpu(void)
{
	mr_sys_sleep_ms(20);
}

static int check_tracepoint(char *detail, size_t len)
{
	int mounted, ok, rc = mr_kernel_tracefs_ensure(&mounted, detail, len);

	if (rc)
		return failed(rc);
	ok = attach_and_trigger("probe_tracepoint", call_getppid, detail, len);
	if (ok && mounted)
		snprintf(detail, len,
			 "fired (tracefs was not mounted: moonrover mounted it at /sys/kernel/tracing)");
	return ok;
}

static int check_tp_btf(char *detail, size_t len)
{
	return attach_and_trigger("probe_tp_btf", yield_cpu, detail, len);
}

static int count_event(void *ctx, void *data, size_t size)
{
	(void)data;
	(void)size;
	(*(int *)ctx)++;
	return 0;
}

static int check_ringbuf(char *detail, size_t len)
{
	struct bpf_program *prog;
	struct probe_bpf *skel;
	struct ring_buffer *rb = NULL;
	struct bpf_link *link = NULL;
	int events = 0, rc = load_one("probe_ringbuf", &skel, &prog, detail, len);

	if (rc)
		return failed(rc);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.probe_ring), count_event, &events, NULL);
	link = rb ? bpf_program__attach(prog) : NULL;
	if (link) {
		call_getppid();
		ring_buffer__consume(rb);
	}
	snprintf(detail, len,
		 events > 0 ? "events delivered through a ring buffer" : "ring buffer unavailable: %s",
		 strerror(errno));
	bpf_link__destroy(link);
	ring_buffer__free(rb);
	probe_bpf__destroy(skel);
	return events > 0;
}

/* Burns CPU for up to a second until the sampler has fired once. */
static int spin_until_hit(const volatile __u64 *hits)
{
	uint64_t end = mr_sys_monotonic_ns() + 1000000000ull;

	while (*hits == 0 && mr_sys_monotonic_ns() < end)
		;
	return *hits > 0;
}

static int check_perf_event(char *detail, size_t len)
{
	struct perf_event_attr attr = { .size = sizeof(attr),
					.type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_CPU_CLOCK,
					.freq = 1,
					.sample_freq = 999 };
	struct bpf_program *prog;
	struct probe_bpf *skel;
	struct bpf_link *link = NULL;
	int fd, ok, rc = load_one("probe_perf_event", &skel, &prog, detail, len);

	if (rc)
		return failed(rc);
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(detail, len, "perf_event_open(cpu-clock): %s", strerror(-rc));
		probe_bpf__destroy(skel);
		return failed(rc);
	}
	link = bpf_program__attach_perf_event(prog, fd);
	if (!link)
		close(fd);
	ok = link && spin_until_hit(&skel->bss->hits);
	snprintf(detail, len,
		 ok ? "cpu-clock samples reach a BPF program" : "no sample reached the program: %s",
		 strerror(errno));
	bpf_link__destroy(link);
	probe_bpf__destroy(skel);
	return ok;
}

static int check_uprobe(char *detail, size_t len)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "mr_kernel_check_uprobe_target");
	struct bpf_program *prog;
	struct probe_bpf *skel;
	struct bpf_link *link;
	Dl_info info;
	int ok, rc;

	if (!dladdr((void *)mr_kernel_check_uprobe_target, &info) || !info.dli_fname) {
		snprintf(detail, len, "cannot find the runtime library's path");
		return 0;
	}
	rc = load_one("probe_uprobe", &skel, &prog, detail, len);
	if (rc)
		return failed(rc);
	link = bpf_program__attach_uprobe_opts(prog, getpid(), info.dli_fname, 0, &opts);
	if (link)
		mr_kernel_check_uprobe_target(1);
	ok = link && skel->bss->hits > 0;
	snprintf(detail, len, ok ? "uprobe fired" : "uprobe unavailable: %s", strerror(errno));
	bpf_link__destroy(link);
	probe_bpf__destroy(skel);
	return ok;
}

static const struct {
	const char *name;
	check_fn fn;
} checks[] = {
	{ "root", check_root },
	{ "btf", check_btf },
	{ "perf_event", check_perf_event },
	{ "tracepoint", check_tracepoint },
	{ "tp_btf", check_tp_btf },
	{ "uprobe", check_uprobe },
	{ "ringbuf", check_ringbuf },
	{ "kallsyms", check_kallsyms },
	{ "network", mr_data_plane_check_network },
	{ "cfi_unwind", mr_profiler_check_cfi },
};

int mr_kernel_check(const char *feature, char *detail, size_t len)
{
	mr_kernel_bpf_log_setup();
	for (size_t i = 0; feature && i < sizeof(checks) / sizeof(checks[0]); i++)
		if (strcmp(checks[i].name, feature) == 0)
			return checks[i].fn(detail, len);
	snprintf(detail, len, "unknown feature '%s'", feature ? feature : "(null)");
	return -EINVAL;
}

const char *mr_kernel_feature(uint32_t i)
{
	return i < sizeof(checks) / sizeof(checks[0]) ? checks[i].name : NULL;
}
