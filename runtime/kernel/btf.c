/* btf.c - the kernel's BTF: present or not, and tracepoint arguments, read
 * from the btf_trace_NAME typedef: a pointer to a function whose first
 * parameter is the tracepoint's private data and whose others are the
 * arguments tp_btf programs receive. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "kernel/btf.h"

#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"

int mr_kernel_btf_check(char *detail, size_t len)
{
	int e;

	if (access(VMLINUX_BTF, R_OK) == 0) {
		snprintf(detail, len, VMLINUX_BTF " is readable");
		return 0;
	}
	e = errno;
	snprintf(detail, len,
		 "this kernel has no usable BTF (" VMLINUX_BTF ": %s); moonrover needs a kernel "
		 "built with CONFIG_DEBUG_INFO_BTF=y",
		 strerror(e));
	return -e;
}

static int count_args(const struct btf *btf, const char *name)
{
	char type_name[128];
	const struct btf_type *t;
	int id;

	snprintf(type_name, sizeof(type_name), "btf_trace_%s", name);
	id = btf__find_by_name_kind(btf, type_name, BTF_KIND_TYPEDEF);
	if (id < 0)
		return id;
	t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
	if (!t || !btf_is_ptr(t))
		return -EINVAL;
	t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 1)
		return -EINVAL;
	return btf_vlen(t) - 1;
}

int mr_kernel_tracepoint_args(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int n;

	if (!btf)
		return -errno; /* libbpf sets it */
	n = count_args(btf, name);
	btf__free(btf);
	return n;
}
