/*
 * bolt_random.c: the one place that asks the operating system for random
 * bytes, so that a port swaps only this file's calls: getrandom() on Linux,
 * arc4random_buf() on macOS and the BSDs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/random.h>
#endif

#include "bolt.h"
#include "bolt_random.h"

#ifdef __linux__
int bolt_random_bytes(void *bytes, size_t length)
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
#else
int bolt_random_bytes(void *bytes, size_t length)
{
	arc4random_buf(bytes, length);
	return 0;
}
#endif

uint32_t bolt_random_u32(void)
{
	struct timespec now;
	uint32_t value;
	int ret = bolt_random_bytes(&value, sizeof(value));

	if (!ret)
		return value;
	FI_WARN(&bolt_prov, FI_LOG_CORE, "random bytes: %s; using the clock instead\n",
		strerror(-ret));
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint32_t) now.tv_nsec ^ (uint32_t) now.tv_sec * 2654435761u ^
	       (uint32_t) getpid() << 16;
}
