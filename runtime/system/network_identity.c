/* network_identity.c - this machine's name and address, which process
 * reports carry (Rover's host_ip property and {{.Rover.HostIPV4}} in naming
 * rules). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api.h"

int mr_sys_hostname(char *buf, size_t len, char *err, size_t errlen)
{
	int e;

	if (len == 0) {
		snprintf(err, errlen, "no room for the host name");
		return -EINVAL;
	}
	if (gethostname(buf, len) != 0) {
		e = errno;
		snprintf(err, errlen, "cannot read the host name: %s", strerror(e));
		return -e;
	}
	buf[len - 1] = '\0';
	return 0;
}

static int usable(const struct ifaddrs *ifa)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ifa->ifa_addr;

	return sin && sin->sin_family == AF_INET && ntohl(sin->sin_addr.s_addr) >> 24 != 127;
}

/* The first IPv4 address that is not loopback, or "" when there is none. */
int mr_sys_ipv4(char *buf, size_t len, char *err, size_t errlen)
{
	struct ifaddrs *all, *ifa;
	int e;

	if (len < INET_ADDRSTRLEN) {
		snprintf(err, errlen, "no room for an IPv4 address");
		return -EINVAL;
	}
	buf[0] = '\0';
	if (getifaddrs(&all) != 0) {
		e = errno;
		snprintf(err, errlen, "cannot list the network interfaces: %s", strerror(e));
		return -e;
	}
	for (ifa = all; ifa && !buf[0]; ifa = ifa->ifa_next) {
		if (usable(ifa) && !inet_ntop(AF_INET, &((const struct sockaddr_in *)ifa->ifa_addr)->sin_addr,
					      buf, (socklen_t)len))
			buf[0] = '\0'; /* cannot happen with room for INET_ADDRSTRLEN: try the next */
	}
	freeifaddrs(all);
	return 0;
}
