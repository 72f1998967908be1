/*
 * softrdma_test_shm.c: linked into the *_shm test programs, which run the
 * same test bodies as their plain counterparts in copy mode shm: it sets
 * FI_BOLT_SOFT_COPY=shm before Criterion starts, and test_config_init reads
 * it as the provider would.
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void test_copy_mode_shm(void)
{
	if (setenv("FI_BOLT_SOFT_COPY", "shm", 1)) {
		perror("setenv FI_BOLT_SOFT_COPY");
		abort();
	}
}
