/* host_facts.c - the host's name and address, which process reports carry
 * (Rover's host_ip property and {{.Rover.HostIPV4}} in naming rules). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api.h"

int mr_host_name(char *buf, size_t len)
{
	if (len == 0 || gethostname(buf, len) != 0)
		return len == 0 ? -EINVAL : -errno;
	buf[len - 1] = '\0';
	return 0;
}

static int usable(const struct ifaddrs *ifa)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ifa->ifa_addr;

	return sin && sin->sin_family == AF_INET && ntohl(sin->sin_addr.s_addr) >> 24 != 127;
}

int mr_host_ipv4(char *buf, size_t len)
{
	struct ifaddrs *all, *ifa;
	int rc = 0;

	if (len < INET_ADDRSTRLEN)
		return -EINVAL;
	buf[0] = '\0';
	if (getifaddrs(&all) != 0)
		return -errno;
	for (ifa = all; ifa && !buf[0]; ifa = ifa->ifa_next) {
		if (usable(ifa) &&
		    !inet_ntop(AF_INET, &((const struct sockaddr_in *)ifa->ifa_addr)->sin_addr, buf, (socklen_t)len))
			rc = -errno;
	}
	freeifaddrs(all);
	return rc;
}
