/*
 * test_collective_api.c: the collective API in one process: AV sets and
 * their set operations, fi_query_collective's answers, the errors of
 * fi_join_collective and of operations on no group (on an endpoint without
 * FI_COLLECTIVE too), and a domain's close
 * waiting for an event queue reader still driving a join just ended.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include <rdma/fi_collective.h>
#include <rdma/fi_ext_bolt.h>

#include "bolt_provider.h"
#include "rdm_fixture.h"

#define API_ADDRESSES 6

static struct rdm_options api_options = { .profile = "rocev2", .caps = FI_MSG | FI_TAGGED | FI_COLLECTIVE };
static struct bolt_fixture_endpoint api_endpoint;
static fi_addr_t api_addresses[API_ADDRESSES];

/* Six addresses in the AV: this endpoint's own name, then made-up peers on other ports. */
static void api_setup(void)
{
	char name[64];
	size_t length = sizeof(name);

	rdm_environment(&api_options, "coll-api");
	cr_assert_eq(rdm_open(&api_endpoint, &api_options), 0);
	cr_assert_eq(fi_getname(&api_endpoint.ep->fid, name, &length), 0);
	for (int i = 0; i < API_ADDRESSES; i++) {
		char peer[64];

		memcpy(peer, name, length);
		peer[2] = (char) (peer[2] + i);         /* another port (high byte), for all but the first */
		cr_assert_eq(fi_av_insert(api_endpoint.av, peer, 1, &api_addresses[i], 0, NULL), 1);
	}
}

static void api_teardown(void)
{
	bolt_fixture_close(&api_endpoint);
	rdm_environment_cleanup(&api_options);
}

static struct fid_av_set *api_set(fi_addr_t start, fi_addr_t end, uint64_t stride, uint64_t flags)
{
	struct fi_av_set_attr attr = {
		.count = API_ADDRESSES, .start_addr = start, .end_addr = end, .stride = stride,
		.flags = flags,
	};
	struct fid_av_set *set = NULL;

	cr_assert_eq(fi_av_set(api_endpoint.av, &attr, &set, NULL), 0);
	return set;
}

/* The members, through fi_av_set_remove's view: removes each expected one in order. */
static void api_expect_members(struct fid_av_set *set, const fi_addr_t *expected, size_t count)
{
	for (size_t i = 0; i < count; i++)
		cr_expect_eq(fi_av_set_remove(set, expected[i]), 0, "member %zu (%lu) missing", i,
			     (unsigned long) expected[i]);
	cr_expect_eq(fi_av_set_remove(set, api_addresses[0]), -FI_EINVAL, "members left over");
	for (size_t i = 0; i < count; i++)
		cr_assert_eq(fi_av_set_insert(set, expected[i]), 0);
}

TestSuite(collective_api, .init = api_setup, .fini = api_teardown);

Test(collective_api, av_set_ranges, .timeout = 30)
{
	struct fid_av_set *all = api_set(0, API_ADDRESSES - 1, 1, 0);
	struct fid_av_set *odd = api_set(1, API_ADDRESSES - 1, 2, 0);
	struct fid_av_set *universe = api_set(FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0, FI_UNIVERSE);
	struct fid_av_set *empty = api_set(FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0, 0);
	/* A range far past the AV's addresses holds those there are, and ends. */
	struct fid_av_set *even = api_set(0, UINT64_MAX - 1, 2, 0);
	struct fid_av_set *wide = api_set(2, UINT64_MAX - 1, UINT64_MAX / 2, 0);
	fi_addr_t odd_members[] = { 1, 3, 5 }, even_members[] = { 0, 2, 4 }, wide_members[] = { 2 };

	api_expect_members(all, api_addresses, API_ADDRESSES);
	api_expect_members(universe, api_addresses, API_ADDRESSES);
	api_expect_members(odd, odd_members, 3);
	api_expect_members(empty, NULL, 0);
	api_expect_members(even, even_members, 3);
	api_expect_members(wide, wide_members, 1);
	fi_close(&even->fid);
	fi_close(&wide->fid);
	fi_close(&all->fid);
	fi_close(&odd->fid);
	fi_close(&universe->fid);
	fi_close(&empty->fid);
}

Test(collective_api, av_set_operations)
{
	struct fid_av_set *low = api_set(0, 2, 1, 0);          /* 0 1 2 */
	struct fid_av_set *even = api_set(0, 4, 2, 0);         /* 0 2 4 */
	fi_addr_t union_members[] = { 0, 1, 2, 4 };
	fi_addr_t intersect_members[] = { 0, 2 };
	fi_addr_t diff_members[] = { 1 };
	fi_addr_t address;

	cr_assert_eq(fi_av_set_union(low, even), 0);
	api_expect_members(low, union_members, 4);
	cr_assert_eq(fi_av_set_intersect(low, even), 0);
	api_expect_members(low, (fi_addr_t[]) { 0, 2, 4 }, 3);
	cr_assert_eq(fi_av_set_remove(low, 4), 0);
	api_expect_members(low, intersect_members, 2);
	cr_assert_eq(fi_av_set_insert(low, 1), 0);
	cr_assert_eq(fi_av_set_diff(low, even), 0);
	api_expect_members(low, diff_members, 1);
	/* No duplicates, no addresses the AV lacks, no removal of a non-member. */
	cr_expect_eq(fi_av_set_insert(low, 1), -FI_EINVAL);
	cr_expect_eq(fi_av_set_insert(low, 99), -FI_EINVAL);
	cr_expect_eq(fi_av_set_remove(low, 3), -FI_EINVAL);
	cr_expect_eq(fi_av_set_addr(low, &address), 0);
	fi_close(&low->fid);
	fi_close(&even->fid);
}

Test(collective_api, av_set_bad_attributes)
{
	struct fi_av_set_attr reversed = { .start_addr = 3, .end_addr = 1, .stride = 1 };
	struct fi_av_set_attr no_stride = { .start_addr = 0, .end_addr = 1, .stride = 0 };
	uint8_t key[4] = { 0 };
	struct fi_av_set_attr keyed = {
		.start_addr = FI_ADDR_NOTAVAIL, .end_addr = FI_ADDR_NOTAVAIL, .comm_key_size = 4,
		.comm_key = key,
	};
	struct fid_av_set *set;

	cr_expect_eq(fi_av_set(api_endpoint.av, &reversed, &set, NULL), -FI_EINVAL);
	cr_expect_eq(fi_av_set(api_endpoint.av, &no_stride, &set, NULL), -FI_EINVAL);
	cr_expect_eq(fi_av_set(api_endpoint.av, &keyed, &set, NULL), -FI_ENOSYS);
}

Test(collective_api, query)
{
	struct fi_collective_attr attr = { .op = FI_SUM, .datatype = FI_FLOAT };

	cr_expect_eq(fi_query_collective(api_endpoint.domain, FI_ALLREDUCE, &attr, 0), 0);
	cr_expect_eq(attr.datatype_attr.size, sizeof(float));
	cr_expect_gt(attr.datatype_attr.count, 0);
	cr_expect_geq(attr.max_members, 8);
	attr.datatype = FI_BOLT_BFLOAT16;
	attr.op = FI_MAX;
	cr_expect_eq(fi_query_collective(api_endpoint.domain, FI_REDUCE_SCATTER, &attr, 0), 0);
	cr_expect_eq(attr.datatype_attr.size, 2);
	attr.datatype = FI_UINT128;
	attr.op = FI_BXOR;
	cr_expect_eq(fi_query_collective(api_endpoint.domain, FI_ALLREDUCE, &attr, FI_SCATTER), 0);
	/* Bitwise ops on floats, ordering on complex numbers, and rooted collectives are not offered. */
	attr.datatype = FI_DOUBLE;
	attr.op = FI_BOR;
	cr_expect_eq(fi_query_collective(api_endpoint.domain, FI_ALLREDUCE, &attr, 0), -FI_EOPNOTSUPP);
	attr.datatype = FI_FLOAT_COMPLEX;
	attr.op = FI_MIN;
	cr_expect_eq(fi_query_collective(api_endpoint.domain, FI_ALLREDUCE, &attr, 0), -FI_EOPNOTSUPP);
	attr.op = FI_PROD;
	cr_expect_eq(fi_query_collective(api_endpoint.domain, FI_ALLREDUCE, &attr, 0), 0);
	attr.op = FI_NOOP;
	attr.datatype = FI_VOID;
	cr_expect_eq(fi_query_collective(api_endpoint.domain, FI_BARRIER, &attr, 0), 0);
	attr.datatype = FI_INT8;
	cr_expect_eq(fi_query_collective(api_endpoint.domain, FI_ALLGATHER, &attr, 0), 0);
	cr_expect_eq(fi_query_collective(api_endpoint.domain, FI_REDUCE, &attr, 0), -FI_EOPNOTSUPP);
	attr.mode = 1;
	cr_expect_eq(fi_query_collective(api_endpoint.domain, FI_BARRIER, &attr, 0), -FI_EINVAL);
}

Test(collective_api, join_errors)
{
	struct fid_av_set *others = api_set(1, API_ADDRESSES - 1, 1, 0);
	struct fid_mc *mc;
	fi_addr_t address;
	int context;

	cr_assert_eq(fi_av_set_addr(others, &address), 0);
	/* No EQ bound. */
	cr_expect_eq(fi_join_collective(api_endpoint.ep, address, others, 0, &mc, NULL), -FI_ENOEQ);
	/* Operations need a joined group. */
	cr_expect_eq(fi_barrier(api_endpoint.ep, address, &context), -FI_EINVAL);
	cr_expect_eq(fi_allreduce(api_endpoint.ep, &context, 1, NULL, &context, NULL, address,
				  FI_INT32, FI_SUM, 0, &context), -FI_EINVAL);
	/* Multicast joins are not offered. */
	cr_expect_eq(fi_join(api_endpoint.ep, &address, 0, &mc, NULL), -FI_ENOSYS);
	fi_close(&others->fid);
}

/*
 * An endpoint without FI_COLLECTIVE in its caps still has the collectives
 * attached (bolt_domain.c): they refuse its joins and find no group for its
 * calls, rather than the calls finding no ops table.
 */
Test(collective_api, join_without_collective_caps)
{
	struct rdm_options options = api_options;
	struct bolt_fixture_endpoint plain;
	struct fid_av_set *others = api_set(1, API_ADDRESSES - 1, 1, 0);
	struct fid_mc *mc;
	fi_addr_t address;
	int context;

	options.caps = FI_MSG | FI_TAGGED;
	cr_assert_eq(rdm_open(&plain, &options), 0);
	cr_assert_not(plain.info->caps & FI_COLLECTIVE);
	cr_assert_eq(fi_av_set_addr(others, &address), 0);
	cr_expect_eq(fi_join_collective(plain.ep, address, others, 0, &mc, NULL), -FI_EOPBADSTATE);
	cr_expect_eq(fi_join(plain.ep, &address, 0, &mc, NULL), -FI_ENOSYS);
	cr_expect_eq(fi_barrier(plain.ep, address, &context), -FI_EINVAL);
	cr_expect_eq(fi_allreduce(plain.ep, &context, 1, NULL, &context, NULL, address, FI_INT32,
				  FI_SUM, 0, &context), -FI_EINVAL);
	fi_close(&others->fid);
	bolt_fixture_close(&plain);
}

struct closing {
	struct fid_domain *domain;
	int result;
	atomic_bool done;
};

static void *close_domain(void *argument)
{
	struct closing *closing = argument;

	closing->result = fi_close(&closing->domain->fid);
	atomic_store(&closing->done, true);
	return NULL;
}

/*
 * A reader of the join's event queue pins the domain while it drives its
 * progress (bolt_eq.c); the application, told the join ended, may close the
 * domain meanwhile. The close waits for the pin instead of freeing the
 * domain under the reader.
 */
Test(collective_api, domain_close_waits_for_an_event_queue_reader)
{
	struct fi_info *hints = rdm_hints(&api_options);
	struct bolt_fixture_endpoint other;
	struct bolt_domain *domain;
	struct closing closing = { .result = -1 };
	pthread_t thread;

	cr_assert_eq(rdm_open_domain(&other, hints, &api_options), 0);
	fi_freeinfo(hints);
	domain = bolt_container_of(other.domain, struct bolt_domain, domain_fid);
	atomic_fetch_add(&domain->progress_pins, 1);
	closing.domain = other.domain;
	cr_assert_eq(pthread_create(&thread, NULL, close_domain, &closing), 0);
	usleep(100 * 1000);
	cr_expect_not(atomic_load(&closing.done), "the close did not wait for the reader");
	atomic_fetch_sub(&domain->progress_pins, 1);
	pthread_join(thread, NULL);
	cr_assert_eq(closing.result, 0);
	other.domain = NULL;
	bolt_fixture_close(&other);
}
