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

/* An IPv4 address; any when the interface was named, else not loopback. */
static int usable(const struct ifaddrs *ifa, const char *ifname)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ifa->ifa_addr;

	if (!sin || sin->sin_family != AF_INET)
		return 0;
	return ifname || ntohl(sin->sin_addr.s_addr) >> 24 != 127;
}

/* The first IPv4 address of the interface named ifname, or the first that
 * is not loopback of any when ifname is NULL, into buf ("" when none). */
static int first_ipv4(const char *ifname, char *buf, size_t len, char *err, size_t errlen)
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
		if (ifname && (!ifa->ifa_name || strcmp(ifa->ifa_name, ifname) != 0))
			continue;
		if (usable(ifa, ifname) &&
		    !inet_ntop(AF_INET, &((const struct sockaddr_in *)ifa->ifa_addr)->sin_addr, buf,
			       (socklen_t)len))
			buf[0] = '\0'; /* cannot happen with room for INET_ADDRSTRLEN: try the next */
	}
	freeifaddrs(all);
	return 0;
}

int mr_sys_ipv4(char *buf, size_t len, char *err, size_t errlen)
{
	return first_ipv4(NULL, buf, len, err, errlen);
}

int mr_sys_ipv4_of(const char *ifname, char *buf, size_t len, char *err, size_t errlen)
{
	if (!ifname) {
		snprintf(err, errlen, "no interface named");
		return -EINVAL;
	}
	return first_ipv4(ifname, buf, len, err, errlen);
}
