/*
 * bolt_random.c: random values for PSNs, nonces and identities, from the
 * operating system's generator (platform/), with a fallback that still
 * differs between processes should it ever fail.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bolt.h"
#include "bolt_random.h"
#include "platform/bolt_platform.h"

int bolt_random_bytes(void *bytes, size_t length)
{
	return bolt_platform_random_bytes(bytes, length);
}

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
