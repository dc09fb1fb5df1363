/* version.c - moonrover's version and the versions of the libraries it was
 * built with, for `moonrover version` and gRPC's user agent. */
#include <stdio.h>

#include <bpf/libbpf.h>
#include <protobuf-c/protobuf-c.h>

#include "api.h"

const char *mr_sys_version(void)
{
	return MR_VERSION;
}

const char *mr_sys_build_info(void)
{
	static char info[128];

	if (!info[0])
		snprintf(info, sizeof(info), "libbpf %u.%u, protobuf-c %s", libbpf_major_version(),
			 libbpf_minor_version(), protobuf_c_version());
	return info;
}
