/*
 * test_collective_failure.c: a rank dies in the middle of an all-reduce.
 * Its side channels close, the other ranks' connections to it fail, and
 * their collective must end with an error within 2 seconds, not hang; the
 * group then refuses new operations, and everything closes cleanly. A large
 * all-reduce runs as a ring; a small one in four ranks by recursive
 * doubling, where most ranks never exchange with the dead one in it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <criterion/criterion.h>

#include "collective_fixture.h"

#define FAILURE_LARGE_COUNT ((16u << 20) / sizeof(float))
#define FAILURE_SMALL_COUNT 5
#define FAILURE_DEADLINE_NS 2000000000ULL

static uint64_t failure_now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t) now.tv_sec * 1000000000ULL + (uint64_t) now.tv_nsec;
}

/*
 * The dying rank starts a large all-reduce, drives it a little, and is
 * killed; before a small one, which it might finish, it is killed at once.
 */
static int failure_die(struct collective_rank *rank, size_t count, float *input, float *result)
{
	struct fi_cq_tagged_entry entry;
	int context;
	ssize_t ret = 0;

	if (count == FAILURE_LARGE_COUNT)
		ret = fi_allreduce(rank->ep, input, count, NULL, result, NULL, rank->coll_addr,
				   FI_FLOAT, FI_SUM, 0, &context);
	for (int i = 0; !ret && i < 200; i++)
		fi_cq_read(rank->cq, &entry, 0);
	collective_publish(rank, failure_now_ns());
	collective_die(rank);
	return -FI_EOTHER;      /* not reached */
}

static int failure_survive(struct collective_rank *rank, size_t count, float *input, float *result)
{
	int context, error = 0, ret;
	uint64_t died, ended;

	ret = (int) fi_allreduce(rank->ep, input, count, NULL, result, NULL, rank->coll_addr,
				 FI_FLOAT, FI_SUM, 0, &context);
	if (ret)
		return ret;
	ret = collective_wait(rank, &context, &error);
	ended = failure_now_ns();
	died = collective_published(rank, rank->size - 1);
	if (ret != -FI_EAVAIL || !error) {
		fprintf(stderr, "rank %d: the all-reduce ended with %d (error %d), not an error\n",
			rank->rank, ret, error);
		return -FI_EOTHER;
	}
	if (!died || ended - died > FAILURE_DEADLINE_NS) {
		fprintf(stderr, "rank %d: the error took %.2f s\n", rank->rank, (ended - died) / 1e9);
		return -FI_ETIMEDOUT;
	}
	/* The group is broken for good: a new operation fails at once or on the CQ. */
	ret = (int) fi_barrier(rank->ep, rank->coll_addr, &context);
	if (!ret && collective_wait(rank, &context, &error) != -FI_EAVAIL)
		return -FI_EOTHER;
	return 0;
}

static int failure_body(struct collective_rank *rank, void *argument)
{
	size_t count = *(const size_t *) argument;
	float *input = calloc(count, sizeof(float));
	float *result = calloc(count, sizeof(float));
	int ret;

	if (!input || !result)
		return -FI_ENOMEM;
	collective_barrier(rank);
	if (rank->rank == rank->size - 1)
		ret = failure_die(rank, count, input, result);
	else
		ret = failure_survive(rank, count, input, result);
	free(input);
	free(result);
	return ret;
}

static void failure_run(const char *profile, int size, size_t count)
{
	struct collective_options options = {
		.profile = profile, .size = size, .last_rank_dies = true,
	};

	cr_assert_eq(collective_run(&options, "coll-fail", failure_body, &count), 0,
		     "%d ranks on %s, %zu elements", size, profile, count);
}

Test(collective_failure, thunderbolt_3) { failure_run("thunderbolt", 3, FAILURE_LARGE_COUNT); }
Test(collective_failure, rocev2_4) { failure_run("rocev2", 4, FAILURE_LARGE_COUNT); }
Test(collective_failure, thunderbolt_4_small) { failure_run("thunderbolt", 4, FAILURE_SMALL_COUNT); }
Test(collective_failure, rocev2_4_small) { failure_run("rocev2", 4, FAILURE_SMALL_COUNT); }
