/*
 * test_collective_choice.c: which algorithm runs an operation, as the group
 * tells through fi_control(FI_BOLT_COLLECTIVE_GET_CHOICE): the table's
 * choice by kind, size and members (one exchange for two members, recursive
 * doubling for middle all-reduces among three and four, the ring with its
 * segments and lanes for large ones, the chain for large broadcasts among
 * three or more, on RC the members reading a broadcast's buffer), and the
 * FI_BOLT_COLLECTIVE_* parameters overriding it.
 * Each operation must also complete. And the yielding progress of
 * FI_BOLT_COLLECTIVE_YIELD=yes still gets every member through.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "collective_fixture.h"

/* One operation and the choice it must get. */
struct choice_case {
	enum fi_collective_op kind;
	size_t count;                   /* float elements, per member where the kind has shares */
	bool in_place;
	const char *algorithm;
	size_t segment_size;
	int lanes;
	int pull;                       /* RC: who copies its rendezvous messages */
};

/* fi_bolt_collective_choice's pull. */
#define WRITTEN 0
#define PULLED 1
#define PULLED_BY_ONE 2

struct choice_cases {
	const struct choice_case *cases;
	size_t count;
};

static ssize_t choice_post(struct collective_rank *rank, const struct choice_case *c, float *input,
			   float *result, void *context)
{
	struct fid_ep *ep = rank->endpoint.ep;
	fi_addr_t group = rank->endpoint.coll_addr;
	float *output = c->in_place ? input : result;

	switch (c->kind) {
	case FI_BARRIER:
		return fi_barrier(ep, group, context);
	case FI_BROADCAST:
		return fi_broadcast(ep, input, c->count, NULL, group, rank->addresses[0], FI_FLOAT, 0,
				    context);
	case FI_ALLGATHER:
		return fi_allgather(ep, input, c->count, NULL, output, NULL, group, FI_FLOAT, 0, context);
	case FI_REDUCE_SCATTER:
		return fi_reduce_scatter(ep, input, c->count, NULL, output, NULL, group, FI_FLOAT, FI_SUM,
					 0, context);
	default:
		return fi_allreduce(ep, input, c->count, NULL, output, NULL, group, FI_FLOAT, FI_SUM, 0,
				    context);
	}
}

/* Runs the case and compares the choice; 0 if both are right. */
static int choice_check(struct collective_rank *rank, const struct choice_case *c)
{
	size_t shares = c->kind == FI_ALLGATHER || c->kind == FI_REDUCE_SCATTER ? (size_t) rank->size : 1;
	size_t elements = c->count * shares + 1;
	float *input = calloc(elements, sizeof(float)), *result = calloc(elements, sizeof(float));
	struct fi_bolt_collective_choice choice = { 0 };
	int context, error = 0, ret = -FI_ENOMEM;

	if (input && result)
		ret = (int) choice_post(rank, c, input, result, &context);
	if (!ret)
		ret = collective_wait(rank, &context, &error);
	if (!ret)
		ret = fi_control(&rank->endpoint.mc->fid, FI_BOLT_COLLECTIVE_GET_CHOICE, &choice);
	free(input);
	free(result);
	if (ret)
		return ret;
	if (!choice.algorithm || strcmp(choice.algorithm, c->algorithm) ||
	    choice.segment_size != c->segment_size || choice.lanes != c->lanes ||
	    choice.pull != c->pull) {
		fprintf(stderr, "rank %d: operation %d of %zu elements: %s, %zu B, %d lanes, pull %d; "
			"expected %s, %zu B, %d lanes, pull %d\n", rank->rank, c->kind, c->count,
			choice.algorithm ? choice.algorithm : "(none)", choice.segment_size,
			choice.lanes, choice.pull, c->algorithm, c->segment_size, c->lanes, c->pull);
		return -FI_EOTHER;
	}
	return 0;
}

static int choice_body(struct collective_rank *rank, void *argument)
{
	const struct choice_cases *cases = argument;
	int ret = 0;

	for (size_t i = 0; !ret && i < cases->count; i++)
		ret = choice_check(rank, &cases->cases[i]);
	return ret;
}

static void choice_run(const struct collective_options *options, const struct choice_case *cases,
		       size_t count)
{
	struct choice_cases argument = { cases, count };

	cr_assert_eq(collective_run(options, "coll-choice", choice_body, &argument), 0);
}

#define CASES(array) array, sizeof(array) / sizeof(array[0])
#define KIB 1024
#define FLOATS(bytes) ((bytes) / sizeof(float))

Test(collective_choice, two_members_by_the_table)
{
	static const struct choice_case cases[] = {
		{ FI_ALLREDUCE, 2, false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(4 * KIB), true, "direct", 0, 0, WRITTEN },
		/*
		 * On UC the ring's 32 KiB halves of 64 KiB go into bounce buffers;
		 * from 128 KiB they ask a rendezvous each, and the exchange wins again.
		 */
		{ FI_ALLREDUCE, FLOATS(64 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(128 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(256 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		/* Larger segments from 2 MiB, where each one's rendezvous costs more than it saves. */
		{ FI_ALLREDUCE, FLOATS(4096 * KIB), false, "ring", 2048 * KIB, 4, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(8192 * KIB), false, "ring", 4096 * KIB, 4, WRITTEN },
		{ FI_ALLGATHER, 2, false, "direct", 0, 0, WRITTEN },
		/* Two members: an all-gather goes direct, a reduce-scatter takes the ring. */
		{ FI_ALLGATHER, FLOATS(32 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_REDUCE_SCATTER, FLOATS(32 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		/* The ring keeps reduce-scatter's input to the end: in place, it cannot run it. */
		{ FI_REDUCE_SCATTER, FLOATS(32 * KIB), true, "direct", 0, 0, WRITTEN },
		{ FI_BROADCAST, FLOATS(64 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_BARRIER, 0, false, "direct", 0, 0, WRITTEN },
	};
	struct collective_options options = { .profile = "thunderbolt", .size = 2 };

	choice_run(&options, CASES(cases));
}

/*
 * On RC a collective's messages from 32 KiB ask a rendezvous: the exchange
 * wins up to 512 KiB. A broadcast's member reads the root's buffer itself
 * from 4 MiB; below, the root writes into the receive it was granted.
 */
Test(collective_choice, two_members_on_rc_by_the_table)
{
	static const struct choice_case cases[] = {
		{ FI_ALLREDUCE, FLOATS(64 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(256 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(512 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		{ FI_BROADCAST, FLOATS(64 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_BROADCAST, FLOATS(2048 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_BROADCAST, FLOATS(4096 * KIB), false, "direct", 0, 0, PULLED },
	};
	struct collective_options options = { .profile = "rocev2", .size = 2 };

	choice_run(&options, CASES(cases));
}

/*
 * Three members on UC: bands as with two, the exchange up to 32 KiB, recursive
 * doubling to 64 KiB, the ring, the exchange again from 128 KiB; broadcasts
 * direct below 64 MiB.
 */
Test(collective_choice, three_members_by_the_table)
{
	static const struct choice_case cases[] = {
		{ FI_ALLREDUCE, FLOATS(16 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(32 * KIB), false, "doubling", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(64 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(256 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(512 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		/* A broadcast of three goes direct where one of four takes the chain. */
		{ FI_BROADCAST, FLOATS(16384 * KIB), false, "direct", 0, 0, WRITTEN },
	};
	struct collective_options options = { .profile = "thunderbolt", .size = 3 };

	choice_run(&options, CASES(cases));
}

/*
 * Three members on RC: the exchange while small, recursive doubling while its
 * whole messages go eagerly, the ring while its blocks do, the exchange,
 * doubling, then the ring again.
 */
Test(collective_choice, three_members_on_rc_by_the_table)
{
	static const struct choice_case cases[] = {
		{ FI_ALLREDUCE, FLOATS(4 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(8 * KIB), false, "doubling", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(16 * KIB), false, "doubling", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(32 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(64 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(128 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(256 * KIB), false, "doubling", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(512 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		/*
		 * Broadcasts: the root writes to both, from 512 KiB to one while the
		 * other reads its buffer, from 2 MiB both read.
		 */
		{ FI_BROADCAST, FLOATS(128 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_BROADCAST, FLOATS(256 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_BROADCAST, FLOATS(512 * KIB), false, "direct", 0, 0, PULLED_BY_ONE },
		{ FI_BROADCAST, FLOATS(1024 * KIB), false, "direct", 0, 0, PULLED_BY_ONE },
		{ FI_BROADCAST, FLOATS(2048 * KIB), false, "direct", 0, 0, PULLED },
	};
	struct collective_options options = { .profile = "rocev2", .size = 3 };

	choice_run(&options, CASES(cases));
}

/*
 * Four members on UC: one round for small all-reduces, recursive doubling's
 * two rounds of the whole from 16 KiB (less to send than direct's three),
 * the ring from 64 KiB, doubling again from 256 KiB, the ring from 1 MiB;
 * broadcasts down the chain from 16 MiB.
 */
Test(collective_choice, four_members_on_uc_by_the_table)
{
	static const struct choice_case cases[] = {
		{ FI_ALLREDUCE, FLOATS(8 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(16 * KIB), false, "doubling", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(64 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(256 * KIB), true, "doubling", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(1024 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		/* A broadcast goes down the chain from 16 MiB (UC has no RDMA read to pull with). */
		{ FI_BROADCAST, FLOATS(8192 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_BROADCAST, FLOATS(16384 * KIB), false, "chain", 4096 * KIB, 0, WRITTEN },
	};
	struct collective_options options = { .profile = "thunderbolt", .size = 4 };

	choice_run(&options, CASES(cases));
}

Test(collective_choice, four_members_by_the_table)
{
	static const struct choice_case cases[] = {
		/* Four ranks on two cores: one round beats recursive doubling's two while small. */
		{ FI_ALLREDUCE, 2, false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(4 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(8 * KIB), false, "doubling", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(16 * KIB), false, "doubling", 0, 0, WRITTEN },
		/* The ring while its quarters go eagerly, where doubling's wholes ask a rendezvous. */
		{ FI_ALLREDUCE, FLOATS(32 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(64 * KIB), false, "doubling", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(256 * KIB), false, "doubling", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(512 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		{ FI_ALLGATHER, 2, false, "direct", 0, 0, WRITTEN },
		/* Four members: an all-gather goes direct, a reduce-scatter up to 8 MiB in all. */
		{ FI_ALLGATHER, FLOATS(64 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_REDUCE_SCATTER, FLOATS(64 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_REDUCE_SCATTER, FLOATS(2048 * KIB), false, "ring", 4096 * KIB, 4, WRITTEN },
		/* Four members on RC: a broadcast pulled from 2 MiB, never down the chain. */
		{ FI_BROADCAST, FLOATS(64 * KIB), false, "direct", 0, 0, WRITTEN },
		{ FI_BROADCAST, FLOATS(256 * KIB), false, "direct", 0, 0, PULLED_BY_ONE },
		{ FI_BROADCAST, FLOATS(8192 * KIB), false, "direct", 0, 0, PULLED },
		{ FI_BROADCAST, FLOATS(16384 * KIB), false, "direct", 0, 0, PULLED },
		{ FI_BARRIER, 0, false, "direct", 0, 0, WRITTEN },
	};
	struct collective_options options = { .profile = "rocev2", .size = 4 };

	choice_run(&options, CASES(cases));
}

/* Five members or more keep recursive doubling for small all-reduces and barriers. */
Test(collective_choice, five_members_by_the_table)
{
	static const struct choice_case cases[] = {
		{ FI_ALLREDUCE, 2, false, "doubling", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(4 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		{ FI_BARRIER, 0, false, "doubling", 0, 0, WRITTEN },
	};
	struct collective_options options = { .profile = "thunderbolt", .size = 5 };

	choice_run(&options, CASES(cases));
}

Test(collective_choice, parameters_override_the_table)
{
	static const struct choice_case ring[] = {
		{ FI_ALLREDUCE, 2, false, "ring", 4 * KIB, 2, WRITTEN },
		{ FI_ALLGATHER, 2, false, "ring", 4 * KIB, 2, WRITTEN },
		{ FI_BROADCAST, 2, false, "chain", 4 * KIB, 0, WRITTEN },
	};
	static const struct choice_case doubling[] = {
		{ FI_ALLREDUCE, FLOATS(64 * KIB), false, "doubling", 0, 0, WRITTEN },
		{ FI_ALLGATHER, FLOATS(64 * KIB), false, "doubling", 0, 0, WRITTEN },
		{ FI_REDUCE_SCATTER, FLOATS(64 * KIB), true, "doubling", 0, 0, WRITTEN },
		{ FI_BROADCAST, 2, false, "direct", 0, 0, WRITTEN },
		{ FI_BARRIER, 0, false, "doubling", 0, 0, WRITTEN },
	};
	static const struct choice_case direct[] = {
		{ FI_ALLREDUCE, 2, false, "direct", 0, 0, WRITTEN },
		{ FI_BARRIER, 0, false, "direct", 0, 0, WRITTEN },
	};
	static const struct choice_case written[] = {
		{ FI_BROADCAST, FLOATS(64 * KIB), false, "direct", 0, 0, WRITTEN },
	};
	static const struct choice_case pulled[] = {
		{ FI_ALLREDUCE, FLOATS(64 * KIB), false, "direct", 0, 0, PULLED },
	};
	static const struct choice_case pulled_by_one[] = {
		{ FI_BROADCAST, FLOATS(64 * KIB), false, "direct", 0, 0, PULLED_BY_ONE },
	};
	struct collective_options ring_options = {
		.profile = "rocev2", .size = 2, .ring_threshold = "0", .segment_size = "4096",
		.lanes = "2",
	};
	struct collective_options doubling_options = {
		.profile = "rocev2", .size = 2, .ring_threshold = "1073741824", .doubling_members = "2",
	};
	/* Five members: the table's doubling, turned to direct. */
	struct collective_options direct_options = {
		.profile = "rocev2", .size = 5, .doubling_members = "8",
	};
	struct collective_options written_options = { .profile = "rocev2", .size = 2, .pull = "0" };
	struct collective_options pulled_options = { .profile = "rocev2", .size = 2, .pull = "1" };
	struct collective_options pulled_by_one_options = { .profile = "rocev2", .size = 3, .pull = "2" };
	/* UC has no RDMA read: asked for, the pull is not made. */
	struct collective_options unreliable_options = { .profile = "thunderbolt", .size = 2, .pull = "1" };

	choice_run(&ring_options, CASES(ring));
	choice_run(&doubling_options, CASES(doubling));
	choice_run(&direct_options, CASES(direct));
	choice_run(&written_options, CASES(written));
	choice_run(&pulled_options, CASES(pulled));
	choice_run(&pulled_by_one_options, CASES(pulled_by_one));
	choice_run(&unreliable_options, CASES(written));
}

/*
 * Four ranks on two cores giving the CPU away whenever they wait: all still
 * finish, in each algorithm (doubling asked for: the table sends four direct).
 */
Test(collective_choice, yielding_progress)
{
	static const struct choice_case cases[] = {
		{ FI_BROADCAST, 2, false, "direct", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, 2, false, "doubling", 0, 0, WRITTEN },
		{ FI_ALLREDUCE, FLOATS(64 * KIB), false, "ring", 256 * KIB, 4, WRITTEN },
		{ FI_BARRIER, 0, false, "doubling", 0, 0, WRITTEN },
	};
	struct collective_options options = {
		.profile = "thunderbolt", .size = 4, .yield = "yes", .doubling_members = "4",
	};

	choice_run(&options, CASES(cases));
}
