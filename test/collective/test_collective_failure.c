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
 * On RC a broadcast whose members pull the root's buffer ends at every
 * survivor when a member dies, one that pulls late included.
 * Closing a group discards its running operations, as closing an endpoint
 * does (fi_endpoint(3)): one a member never joins, and one whose receive a
 * member is about to write into, which the close waits for.
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
		ret = fi_allreduce(rank->endpoint.ep, input, count, NULL, result, NULL, rank->endpoint.coll_addr,
				   FI_FLOAT, FI_SUM, 0, &context);
	for (int i = 0; !ret && i < 200; i++)
		fi_cq_read(rank->endpoint.cq, &entry, 0);
	collective_publish(rank, failure_now_ns());
	collective_die(rank);
	return -FI_EOTHER;      /* not reached */
}

static int failure_survive(struct collective_rank *rank, size_t count, float *input, float *result)
{
	int context, error = 0, ret;
	uint64_t died, ended;

	ret = (int) fi_allreduce(rank->endpoint.ep, input, count, NULL, result, NULL, rank->endpoint.coll_addr,
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
		fi_cq_read(rank->endpoint.cq, NULL, 0);
	for (size_t i = 0; i < count * sizeof(float); i++)
		if (((const unsigned char *) result)[i] != 0x5a) {
			fprintf(stderr, "rank %d: byte %zu of the result written after the error\n",
				rank->rank, i);
			return -FI_EOTHER;
		}
	/* The group is broken for good: a new operation fails at once or on the CQ. */
	ret = (int) fi_barrier(rank->endpoint.ep, rank->endpoint.coll_addr, &context);
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

/*
 * Ranks that give the CPU away whenever their collective waits
 * (FI_BOLT_COLLECTIVE_YIELD, on by default where they outnumber the cores)
 * would let the others finish the large all-reduce while the dying rank
 * drives it "a little": it must die in the middle.
 */
static void failure_run(const char *profile, int size, size_t count)
{
	struct collective_options options = {
		.profile = profile, .size = size, .last_rank_dies = true, .yield = "no",
		/* The small one by recursive doubling, which four ranks take only when asked. */
		.doubling_members = "4",
	};

	cr_assert_eq(collective_run(&options, "coll-fail", failure_body, &count), 0,
		     "%d ranks on %s, %zu elements", size, profile, count);
}

Test(collective_failure, thunderbolt_3) { failure_run("thunderbolt", 3, FAILURE_LARGE_COUNT); }
Test(collective_failure, rocev2_4) { failure_run("rocev2", 4, FAILURE_LARGE_COUNT); }
Test(collective_failure, thunderbolt_4_small) { failure_run("thunderbolt", 4, FAILURE_SMALL_COUNT); }
Test(collective_failure, rocev2_4_small) { failure_run("rocev2", 4, FAILURE_SMALL_COUNT); }

/* Reads rank's CQ for milliseconds: how many completions and errors came. */
static int discard_completions_for(struct collective_rank *rank, uint64_t milliseconds)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	uint64_t until = failure_now_ns() + milliseconds * 1000000ULL;
	int seen = 0;

	while (failure_now_ns() < until) {
		ssize_t ret = fi_cq_read(rank->endpoint.cq, &entry, 1);

		if (ret == 1)
			seen++;
		else if (ret == -FI_EAVAIL && fi_cq_readerr(rank->endpoint.cq, &error, 0) == 1)
			seen++;
	}
	return seen;
}

/*
 * Three ranks all-gather 40 KiB each (directly: the ring threshold set above
 * it; by rendezvous: above the bounce size). Rank 1 makes no progress for a
 * while once its request to rank 0 is out, so rank 0 answers it with its
 * result buffer and waits for the write; rank 2 dies. Rank 0's all-gather
 * fails, but rank 1 still writes into that buffer when it wakes: rank 0 may
 * report the error only once it has.
 */
#define STRAGGLER_BYTES (40 * 1024)
#define STRAGGLER_SLEEP_US 300000
#define STRAGGLER_WATCH_MS 1000

static int straggler_receiver(struct collective_rank *rank, unsigned char *result, size_t bytes,
			      void *context)
{
	int error = 0;

	if (collective_wait(rank, context, &error) != -FI_EAVAIL || !error)
		return -FI_EOTHER;
	/* Told it failed, the application has its buffer back: nothing more lands in it. */
	memset(result, 0x5a, bytes);
	discard_completions_for(rank, STRAGGLER_WATCH_MS);
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
	ret = (int) fi_allgather(rank->endpoint.ep, input, count, NULL, result, NULL, rank->endpoint.coll_addr,
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
		.profile = "rocev2", .size = 3, .last_rank_dies = true, .ring_threshold = "1073741824",
	};

	cr_assert_eq(collective_run(&options, "coll-straggler", straggler_body, NULL), 0);
}

/*
 * A broadcast of three on RC whose members pull the root's buffer: rank 2
 * dies at once, so the root's broadcast fails within the deadline, and the
 * root, told so, puts other data in its buffer. Rank 1 made no progress
 * meanwhile: it finds the root's request only then. Its broadcast must end,
 * with an error (rank 2 is dead), or with the root's data had it read in
 * time, never with the other data.
 */
#define PULL_STRAGGLER_COUNT (256 * 1024 / sizeof(float))
#define PULL_STRAGGLER_VALUE 7.0f

static int pull_straggler_root(struct collective_rank *rank, float *buffer, void *context)
{
	int error = 0;
	uint64_t died;

	if (collective_wait(rank, context, &error) != -FI_EAVAIL || !error) {
		fprintf(stderr, "rank 0: the broadcast did not fail with rank 2 dead\n");
		return -FI_EOTHER;
	}
	died = collective_published(rank, rank->size - 1);
	if (!died || failure_now_ns() - died > FAILURE_DEADLINE_NS) {
		fprintf(stderr, "rank 0: the error took too long\n");
		return -FI_ETIMEDOUT;
	}
	/* Told it failed, the application has its buffer back. */
	memset(buffer, 0x5a, PULL_STRAGGLER_COUNT * sizeof(float));
	discard_completions_for(rank, STRAGGLER_WATCH_MS);
	return 0;
}

static int pull_straggler_member(struct collective_rank *rank, const float *buffer, void *context)
{
	int error = 0, ret;

	usleep(STRAGGLER_SLEEP_US);
	ret = collective_wait(rank, context, &error);
	if (ret == -FI_EAVAIL && error)
		return 0;
	for (size_t index = 0; !ret && index < PULL_STRAGGLER_COUNT; index++)
		if (buffer[index] != PULL_STRAGGLER_VALUE) {
			fprintf(stderr, "rank 1: element %zu is not the root's, yet the broadcast "
				"succeeded\n", index);
			return -FI_EOTHER;
		}
	return ret;
}

static int pull_straggler_body(struct collective_rank *rank, void *argument)
{
	float *buffer = malloc(PULL_STRAGGLER_COUNT * sizeof(float));
	int context, ret;

	(void) argument;
	if (!buffer)
		return -FI_ENOMEM;
	for (size_t index = 0; index < PULL_STRAGGLER_COUNT; index++)
		buffer[index] = rank->rank ? 0.0f : PULL_STRAGGLER_VALUE;
	collective_barrier(rank);
	if (rank->rank == 2) {
		collective_publish(rank, failure_now_ns());
		collective_die(rank);
	}
	ret = (int) fi_broadcast(rank->endpoint.ep, buffer, PULL_STRAGGLER_COUNT, NULL,
				 rank->endpoint.coll_addr, rank->addresses[0], FI_FLOAT, 0, &context);
	if (!ret)
		ret = rank->rank ? pull_straggler_member(rank, buffer, &context) :
				   pull_straggler_root(rank, buffer, &context);
	free(buffer);
	return ret;
}

Test(collective_failure, pulled_broadcast_with_a_dead_member_ends)
{
	struct collective_options options = {
		.profile = "rocev2", .size = 3, .last_rank_dies = true, .pull = "1",
	};

	cr_assert_eq(collective_run(&options, "coll-pull-straggler", pull_straggler_body, NULL), 0);
}

/*
 * Rank 0 starts an all-reduce that rank 1 never joins, and closes the group:
 * the close succeeds, nothing is reported, and the endpoint closes after it.
 */
static int never_joined_body(struct collective_rank *rank, void *argument)
{
	size_t count = (64u << 10) / sizeof(float);
	float *input = calloc(count, sizeof(float)), *result = calloc(count, sizeof(float));
	int context, ret = 0;

	(void) argument;
	if (!input || !result)
		return -FI_ENOMEM;
	collective_barrier(rank);
	if (rank->rank == 0) {
		ret = (int) fi_allreduce(rank->endpoint.ep, input, count, NULL, result, NULL, rank->endpoint.coll_addr,
					 FI_FLOAT, FI_SUM, 0, &context);
		if (!ret && discard_completions_for(rank, 50))
			ret = -FI_EOTHER;
		if (!ret)
			ret = fi_close(&rank->endpoint.mc->fid);
		if (!ret)
			rank->endpoint.mc = NULL;
		if (!ret && discard_completions_for(rank, 100)) {
			fprintf(stderr, "rank 0: the discarded all-reduce was reported\n");
			ret = -FI_EOTHER;
		}
		if (!ret)
			ret = fi_close(&rank->endpoint.ep->fid);
		if (!ret)
			rank->endpoint.ep = NULL;
	}
	free(input);
	free(result);
	return ret;
}

Test(collective_failure, closing_discards_an_operation_a_member_never_joins)
{
	struct collective_options options = { .profile = "thunderbolt", .size = 2 };

	cr_assert_eq(collective_run(&options, "coll-discard", never_joined_body, NULL), 0);
}

/* The join itself, which rank 1 never makes: closed, it reports nothing on the EQ. */
static int join_never_made_body(struct collective_rank *rank, void *argument)
{
	struct fi_av_set_attr attr = {
		.count = (size_t) rank->size, .start_addr = 0,
		.end_addr = (fi_addr_t) rank->size - 1, .stride = 1,
	};
	struct fi_eq_entry entry;
	fi_addr_t set_addr;
	uint32_t event;
	int context, ret = 0;

	(void) argument;
	collective_barrier(rank);
	if (rank->rank != 0)
		return 0;
	ret = fi_av_set(rank->endpoint.av, &attr, &rank->endpoint.set, NULL);
	if (!ret)
		ret = fi_av_set_addr(rank->endpoint.set, &set_addr);
	if (!ret)
		ret = fi_join_collective(rank->endpoint.ep, set_addr, rank->endpoint.set, 0, &rank->endpoint.mc, &context);
	for (int i = 0; !ret && i < 1000; i++)
		if (fi_eq_read(rank->endpoint.eq, &event, &entry, sizeof(entry), 0) != -FI_EAGAIN)
			ret = -FI_EOTHER;
	if (!ret)
		ret = fi_close(&rank->endpoint.mc->fid);
	if (!ret)
		rank->endpoint.mc = NULL;
	for (int i = 0; !ret && i < 1000; i++) {
		fi_cq_read(rank->endpoint.cq, NULL, 0);
		if (fi_eq_read(rank->endpoint.eq, &event, &entry, sizeof(entry), 0) != -FI_EAGAIN)
			ret = -FI_EOTHER;
	}
	return ret;
}

Test(collective_failure, closing_discards_a_join_a_member_never_makes)
{
	struct collective_options options = { .profile = "rocev2", .size = 2, .no_join = true };

	cr_assert_eq(collective_run(&options, "coll-join-discard", join_never_made_body, NULL), 0);
}

/*
 * Two ranks all-gather 40 KiB each by rendezvous (directly: the ring
 * threshold set above it). Rank 1 makes no progress
 * for a while once its request to rank 0 is out, so rank 0 answers it with
 * its result buffer. Rank 0 then closes the group: the close returns only
 * once rank 1 has written, for the application may free the buffer after
 * it. Rank 1's all-gather still ends right: rank 0's message to it goes out
 * from a copy. A rank 1 that sleeps past the close's 2 s has its connection
 * failed instead, and its all-gather ends with an error.
 */
#define CLOSING_STALL_US 3000000

static int closing_straggler_body(struct collective_rank *rank, void *argument)
{
	useconds_t sleep_us = *(const useconds_t *) argument;
	size_t count = STRAGGLER_BYTES / sizeof(float), bytes = count * sizeof(float);
	unsigned char *input = malloc(bytes), *result = calloc(2, bytes);
	int context, error = 0, ret;

	if (!input || !result)
		return -FI_ENOMEM;
	memset(input, 0x10 + rank->rank, bytes);
	collective_barrier(rank);
	ret = (int) fi_allgather(rank->endpoint.ep, input, count, NULL, result, NULL, rank->endpoint.coll_addr,
				 FI_FLOAT, 0, &context);
	if (!ret && rank->rank == 1) {
		usleep(sleep_us);
		ret = collective_wait(rank, &context, &error);
		if (sleep_us == CLOSING_STALL_US)
			ret = ret == -FI_EAVAIL && error ? 0 : -FI_EOTHER;
		for (size_t i = 0; !ret && sleep_us != CLOSING_STALL_US && i < 2 * bytes; i++)
			if (result[i] != 0x10 + i / bytes)
				ret = -FI_EIO;
	}
	if (!ret && rank->rank == 0) {
		if (discard_completions_for(rank, STRAGGLER_SLEEP_US / 3000))
			ret = -FI_EOTHER;
		if (!ret)
			ret = fi_close(&rank->endpoint.mc->fid);
		if (!ret)
			rank->endpoint.mc = NULL;
		/* The application has its buffer back: nothing more lands in it. */
		memset(result, 0x5a, 2 * bytes);
		if (!ret && discard_completions_for(rank, STRAGGLER_WATCH_MS))
			ret = -FI_EOTHER;
		for (size_t i = 0; !ret && i < 2 * bytes; i++)
			if (result[i] != 0x5a) {
				fprintf(stderr, "rank 0: byte %zu written after the group closed\n", i);
				ret = -FI_EOTHER;
			}
	}
	free(input);
	free(result);
	return ret;
}

static void closing_straggler_run(const char *profile, useconds_t sleep_us)
{
	struct collective_options options = {
		.profile = profile, .size = 2, .ring_threshold = "1073741824",
	};

	cr_assert_eq(collective_run(&options, "coll-close", closing_straggler_body, &sleep_us), 0);
}

Test(collective_failure, closing_waits_for_a_write_into_its_receive_rocev2)
{
	closing_straggler_run("rocev2", STRAGGLER_SLEEP_US);
}

Test(collective_failure, closing_waits_for_a_write_into_its_receive_thunderbolt)
{
	closing_straggler_run("thunderbolt", STRAGGLER_SLEEP_US);
}

Test(collective_failure, closing_fails_a_member_that_stalls_its_write)
{
	closing_straggler_run("rocev2", CLOSING_STALL_US);
}
