/* uuid.c - random (version 4) UUIDs, which the Rover drop-in uses as its
 * agent instance id. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "api.h"

int mr_sys_random_uuid(char *buf, size_t len, char *err, size_t errlen)
{
	unsigned char b[16];
	ssize_t got;

	if (len < 37) {
		snprintf(err, errlen, "a UUID needs a 37-byte buffer, got %zu", len);
		return -EINVAL;
	}
	got = getrandom(b, sizeof(b), 0);
	if (got != (ssize_t)sizeof(b)) {
		int e = got < 0 ? errno : EIO;

		snprintf(err, errlen, "no random bytes for a UUID: %s", strerror(e));
		return -e;
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(buf, len, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	return 0;
}
