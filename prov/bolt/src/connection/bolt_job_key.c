/*
 * bolt_job_key.c: the digest of the job key (FNV-1a, 64 bits) and the
 * per-user default key. FNV-1a is enough: the digest only has to tell keys
 * apart, not resist an adversary (see bolt_job_key.h).
 */
#include <stdio.h>
#include <unistd.h>

#include "connection/bolt_job_key.h"

#define BOLT_FNV1A_OFFSET_BASIS 0xcbf29ce484222325ULL
#define BOLT_FNV1A_PRIME 0x100000001b3ULL

static uint64_t bolt_fnv1a(const char *text)
{
	uint64_t hash = BOLT_FNV1A_OFFSET_BASIS;

	for (const unsigned char *c = (const unsigned char *) text; *c; c++) {
		hash ^= *c;
		hash *= BOLT_FNV1A_PRIME;
	}
	return hash;
}

uint64_t bolt_job_key_digest(const char *job_key)
{
	char default_key[32];

	if (job_key && job_key[0])
		return bolt_fnv1a(job_key);
	snprintf(default_key, sizeof(default_key), "uid:%lu", (unsigned long) getuid());
	return bolt_fnv1a(default_key);
}
