/*
 * bolt_platform_random.c (Linux): random bytes from getrandom(2), which
 * blocks only until the kernel's generator is first seeded at boot.
 */
#include <errno.h>
#include <sys/random.h>

#include "platform/bolt_platform.h"

int bolt_platform_random_bytes(void *bytes, size_t length)
{
	size_t filled = 0;
	ssize_t got;

	while (filled < length) {
		got = getrandom((char *) bytes + filled, length - filled, 0);
		if (got > 0)
			filled += (size_t) got;
		else if (got < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}
