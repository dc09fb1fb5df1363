/* host_port.c - parses "host:port" and "[ipv6]:port" (see host_port.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/host_port.h"

static int parse_port(const char *s, uint16_t *port)
{
	char *end;
	unsigned long p;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	p = strtoul(s, &end, 10);
	if (errno || *end || p > 65535)
		return -EINVAL;
	*port = (uint16_t)p;
	return 0;
}

int mr_host_port_parse(const char *address, char *host, size_t len, uint16_t *port)
{
	const char *colon = address ? strrchr(address, ':') : NULL;
	const char *h = address;
	size_t n = colon ? (size_t)(colon - address) : 0;

	if (!colon || strpbrk(address, " \t\r\n/") || parse_port(colon + 1, port) != 0)
		return -EINVAL;
	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		h++;
		n -= 2;
	} else if (memchr(h, ':', n) || memchr(h, '[', n)) {
		return -EINVAL;
	}
	if (n == 0 || n >= len)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	return 0;
}
