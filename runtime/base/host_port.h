/* host_port.h - "host:port" addresses as users write them: a name, an IPv4
 * address, or an IPv6 address in brackets, then a port. */
#ifndef MR_BASE_HOST_PORT_H
#define MR_BASE_HOST_PORT_H

#include <stddef.h>
#include <stdint.h>

/* Splits address into host (brackets removed, NUL-terminated in host[0..len))
 * and port (0 to 65535). Returns 0, or -EINVAL when address is not of that
 * form (no port, a bare IPv6 address, spaces, an empty host). */
int mr_host_port_parse(const char *address, char *host, size_t len, uint16_t *port);

#endif
