/* btf_tracepoint.c - reads the btf_trace_NAME typedef from vmlinux BTF: a
 * pointer to a function whose first parameter is the tracepoint's private
 * data and whose others are the arguments tp_btf programs receive. */
#include <errno.h>
#include <stdio.h>

#include <bpf/btf.h>

#include "btf_tracepoint.h"

static int count_args(const struct btf *btf, const char *name)
{
	char type_name[128];
	const struct btf_type *t;
	int id;

	snprintf(type_name, sizeof(type_name), "btf_trace_%s", name);
	id = btf__find_by_name_kind(btf, type_name, BTF_KIND_TYPEDEF);
	if (id < 0)
		return -ENOENT;
	t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
	if (!t || !btf_is_ptr(t))
		return -EINVAL;
	t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 1)
		return -EINVAL;
	return btf_vlen(t) - 1;
}

int mr_btf_tracepoint_args(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int n;

	if (!btf)
		return -ENOENT;
	n = count_args(btf, name);
	btf__free(btf);
	return n;
}
