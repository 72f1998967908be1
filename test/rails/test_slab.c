/*
 * test_slab.c: the registered slab pool on the software device's Thunderbolt
 * profile: thousands of buffers cost one device MR, buffers are distinct,
 * aligned, inside the registration, and all come back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "rails/bolt_slab.h"

struct slab_fixture {
	struct bolt_verbs verbs;
	struct ibv_device **devices;
	struct ibv_context *context;
	struct ibv_pd *pd;
};

static struct slab_fixture fixture;

static void fixture_open(void)
{
	struct bolt_params params;
	char namespace_name[64];
	int count;

	snprintf(namespace_name, sizeof(namespace_name), "slab-%d", getpid());
	setenv("FI_BOLT_SOFT", "thunderbolt", 1);
	setenv("FI_BOLT_SOFT_NAMESPACE", namespace_name, 1);
	cr_assert_eq(bolt_params_read(&params), 0);
	cr_assert_eq(bolt_verbs_open(&params, &fixture.verbs), 0);
	fixture.devices = fixture.verbs.get_device_list(&count);
	cr_assert(fixture.devices && count == 1);
	fixture.context = fixture.verbs.open_device(fixture.devices[0]);
	cr_assert(fixture.context);
	fixture.pd = fixture.verbs.alloc_pd(fixture.context);
	cr_assert(fixture.pd);
}

static void fixture_close(void)
{
	fixture.verbs.dealloc_pd(fixture.pd);
	fixture.verbs.close_device(fixture.context);
	fixture.verbs.free_device_list(fixture.devices);
	bolt_verbs_close(&fixture.verbs);
}

TestSuite(slab, .init = fixture_open, .fini = fixture_close);

Test(slab, thousands_of_buffers_in_one_registration)
{
	const uint32_t count = 4096;
	struct bolt_slab_pool pool;
	char **buffers = calloc(count, sizeof(*buffers));
	struct ibv_mr *extra[99];
	int extra_count = 0;

	cr_assert(buffers);
	cr_assert_eq(bolt_slab_pool_create(&fixture.verbs, fixture.pd, 4096, count,
					   IBV_ACCESS_LOCAL_WRITE, &pool), 0);
	for (uint32_t i = 0; i < count; i++) {
		buffers[i] = bolt_slab_get(&pool);
		cr_assert(buffers[i], "buffer %u", i);
		cr_assert(bolt_slab_owns(&pool, buffers[i]));
		cr_assert_eq((uintptr_t) buffers[i] % 64, 0);
		cr_assert_eq(bolt_slab_buffer(&pool, bolt_slab_index(&pool, buffers[i])), buffers[i]);
		memset(buffers[i], (int) (i & 0xff), 4096);
	}
	cr_assert_null(bolt_slab_get(&pool), "a 4097th buffer from 4096");
	for (uint32_t i = 0; i < count; i++)
		cr_assert_eq((unsigned char) buffers[i][4095], i & 0xff, "buffers overlap at %u", i);

	/* The pool holds one of the device's 100 MRs: 99 more still fit, not 100. */
	for (; extra_count < 99; extra_count++) {
		extra[extra_count] = fixture.verbs.reg_mr(fixture.pd, buffers[extra_count], 4096,
							  IBV_ACCESS_LOCAL_WRITE);
		cr_assert(extra[extra_count], "MR %d of the 99 left", extra_count);
	}
	cr_assert_null(fixture.verbs.reg_mr(fixture.pd, buffers[100], 4096, IBV_ACCESS_LOCAL_WRITE));
	while (extra_count > 0)
		fixture.verbs.dereg_mr(extra[--extra_count]);

	for (uint32_t i = 0; i < count; i++)
		bolt_slab_put(&pool, buffers[i]);
	cr_assert_eq(pool.free_count, count);
	bolt_slab_pool_destroy(&pool);
	free(buffers);
}

Test(slab, sizes_round_up_to_the_alignment)
{
	struct bolt_slab_pool pool;
	char *first, *second;

	cr_assert_eq(bolt_slab_pool_create(&fixture.verbs, fixture.pd, 100, 2,
					   IBV_ACCESS_LOCAL_WRITE, &pool), 0);
	cr_assert_eq(pool.buffer_size, 128);
	first = bolt_slab_get(&pool);
	second = bolt_slab_get(&pool);
	cr_assert_eq(labs(second - first), 128);
	cr_assert_not(bolt_slab_owns(&pool, first + 1));
	bolt_slab_put(&pool, first);
	bolt_slab_put(&pool, second);
	bolt_slab_pool_destroy(&pool);
}

Test(slab, invalid_sizes_are_rejected)
{
	struct bolt_slab_pool pool;

	cr_assert_eq(bolt_slab_pool_create(&fixture.verbs, fixture.pd, 0, 8,
					   IBV_ACCESS_LOCAL_WRITE, &pool), -FI_EINVAL);
	cr_assert_eq(bolt_slab_pool_create(&fixture.verbs, fixture.pd, 4096, 0,
					   IBV_ACCESS_LOCAL_WRITE, &pool), -FI_EINVAL);
	cr_assert_eq(bolt_slab_pool_create(&fixture.verbs, fixture.pd, SIZE_MAX / 2, 4,
					   IBV_ACCESS_LOCAL_WRITE, &pool), -FI_EINVAL);
}
