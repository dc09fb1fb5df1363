/* data_plane_check.h - the network tracer's probe for `moonrover check`. */
#ifndef MR_DATAPLANE_DATA_PLANE_CHECK_H
#define MR_DATAPLANE_DATA_PLANE_CHECK_H

#include <stddef.h>

/* Traces this process, makes a loopback TCP connection and sends a few bytes
 * over it: 1 when the connection's events and both directions' bytes came
 * through, 0 when not, -EPERM when not allowed; says what happened in
 * detail. */
int mr_data_plane_check_network(char *detail, size_t len);

#endif
