/*
 * test_collective_failure.c: a rank dies in the middle of an all-reduce.
 * Its side channels close, the other ranks' connections to it fail, and
 * their collective must end with an error within 2 seconds, not hang, and
 * nothing is written into its result after that; the group then refuses new
 * operations, and everything closes cleanly. A large
 * all-reduce runs as a ring; a small one in four ranks by recursive
 * doubling, where most ranks never exchange with the dead one in it. A
 * survivor whose message another is still receiving when the group breaks
 * writes it all the same: the receiver reports the error only after that.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
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
	/* Told it failed, the application has its buffer back: nothing more lands in it. */
	memset(result, 0x5a, count * sizeof(float));
	for (int i = 0; i < 2000; i++)
		fi_cq_read(rank->cq, NULL, 0);
	for (size_t i = 0; i < count * sizeof(float); i++)
		if (((const unsigned char *) result)[i] != 0x5a) {
			fprintf(stderr, "rank %d: byte %zu of the result written after the error\n",
				rank->rank, i);
			return -FI_EOTHER;
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

/*
 * Three ranks all-gather 40 KiB each (directly: below the ring threshold;
 * by rendezvous: above the bounce size). Rank 1 makes no progress for a
 * while once its request to rank 0 is out, so rank 0 answers it with its
 * result buffer and waits for the write; rank 2 dies. Rank 0's all-gather
 * fails, but rank 1 still writes into that buffer when it wakes: rank 0 may
 * report the error only once it has.
 */
#define STRAGGLER_BYTES (40 * 1024)
#define STRAGGLER_SLEEP_US 300000
#define STRAGGLER_WATCH_NS 1000000000ULL

static int straggler_receiver(struct collective_rank *rank, unsigned char *result, size_t bytes,
			      void *context)
{
	int error = 0;
	uint64_t until;

	if (collective_wait(rank, context, &error) != -FI_EAVAIL || !error)
		return -FI_EOTHER;
	/* Told it failed, the application has its buffer back: nothing more lands in it. */
	memset(result, 0x5a, bytes);
	until = failure_now_ns() + STRAGGLER_WATCH_NS;
	while (failure_now_ns() < until)
		fi_cq_read(rank->cq, NULL, 0);
	for (size_t i = 0; i < bytes; i++)
		if (result[i] != 0x5a) {
			fprintf(stderr, "rank 0: byte %zu of the result written after the error\n", i);
			return -FI_EOTHER;
		}
	return 0;
}

static int straggler_body(struct collective_rank *rank, void *argument)
{
	size_t count = STRAGGLER_BYTES / sizeof(float), bytes = count * sizeof(float) * 3;
	float *input = calloc(count, sizeof(float));
	unsigned char *result = calloc(1, bytes);
	int context, error, ret;

	(void) argument;
	if (!input || !result)
		return -FI_ENOMEM;
	collective_barrier(rank);
	ret = (int) fi_allgather(rank->ep, input, count, NULL, result, NULL, rank->coll_addr,
				 FI_FLOAT, 0, &context);
	if (!ret && rank->rank == 2) {
		usleep(STRAGGLER_SLEEP_US / 10);
		collective_die(rank);
	}
	if (!ret && rank->rank == 1) {
		usleep(STRAGGLER_SLEEP_US);
		ret = collective_wait(rank, &context, &error) == -FI_EAVAIL ? 0 : -FI_EOTHER;
	}
	if (!ret && rank->rank == 0)
		ret = straggler_receiver(rank, result, bytes, &context);
	free(input);
	free(result);
	return ret;
}

Test(collective_failure, receiver_reports_after_the_last_write)
{
	struct collective_options options = {
		.profile = "rocev2", .size = 3, .last_rank_dies = true,
	};

	cr_assert_eq(collective_run(&options, "coll-straggler", straggler_body, NULL), 0);
}
