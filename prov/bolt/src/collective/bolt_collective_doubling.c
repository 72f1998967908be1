/*
 * bolt_collective_doubling.c: recursive doubling, for small all-reduces,
 * all-gathers, reduce-scatters and barriers. In each of log2(n) steps a
 * member swaps data with the member whose rank differs from its own in one
 * bit. That is n log2(n) messages in all, where the fully connected
 * algorithm sends n(n-1): when ranks share cores, the messages are the cost.
 *
 * An all-reduce swaps the whole partial result each step and combines the
 * two, the lower rank's partial on the left, so that partners compute the
 * same bits and every member ends with the same bits. An all-gather swaps
 * the blocks gathered so far, twice as many each step. A reduce-scatter
 * halves (recursive halving): each step a member sends the half of its
 * remaining blocks that its partner goes on with and combines the partner's
 * copy of the other half into its own, until only its own block is left.
 *
 * Where n is not a power of two, an all-reduce or barrier first has each
 * member r beyond the largest power p hand its input to member r - p, which
 * combines it with its own, and take the result back at the end (an
 * all-gather or reduce-scatter then goes direct: its blocks would not stay
 * contiguous). Steps are numbered for every member alike: 0 folds in, 1 to
 * log2(p) double, the last folds out. A step's number is its messages'
 * lane, so messages of different steps between the same two members never
 * match each other's receives.
 */
#include <stdlib.h>
#include <string.h>

#include "collective/bolt_collective.h"

/* What a member does in one step. */
struct bolt_collective_doubling_step {
	int partner;            /* -1: nothing this step */
	bool sends;             /* length bytes from send, to partner */
	bool receives;          /* partner's length bytes, into receive */
	bool combines;          /* receive into kept, once both are done */
	const char *send;
	char *receive;
	char *kept;
	size_t length;
};

static int bolt_collective_doubling_power(int size)
{
	int power = 1;

	while (power <= size / 2)
		power *= 2;
	return power;
}

bool bolt_collective_doubling_can(const struct bolt_collective_operation *operation)
{
	int size = operation->group->size;

	switch (operation->kind) {
	case FI_ALLREDUCE:
	case FI_BARRIER:
		return true;
	case FI_ALLGATHER:
	case FI_REDUCE_SCATTER:
		return bolt_collective_doubling_power(size) == size;
	default:
		return false;
	}
}

/* An all-reduce's result; one member's block of the others. */
static size_t bolt_collective_doubling_bytes(const struct bolt_collective_operation *operation)
{
	return operation->kind == FI_BARRIER ? 0 : operation->count * operation->element_size;
}

/* The first of the mask blocks, aligned to mask, that hold rank's. */
static size_t bolt_collective_doubling_base(int rank, int mask)
{
	return (size_t) (rank & ~(mask - 1));
}

/* All-reduce and barrier: the whole partial result each way, and the fold of extra members. */
static void bolt_collective_doubling_plan_reduce(const struct bolt_collective_operation *operation,
						 int step, struct bolt_collective_doubling_step *plan)
{
	int rank = operation->group->rank, size = operation->group->size;
	int power = bolt_collective_doubling_power(size), extra = size - power;
	bool reduces = operation->kind != FI_BARRIER;

	if (step == 0 || step == operation->steps - 1) {
		bool folding_in = step == 0;

		if (rank >= power) {
			plan->partner = rank - power;
			plan->sends = folding_in;
			plan->receives = !folding_in;
		} else if (rank < extra) {
			plan->partner = rank + power;
			plan->sends = !folding_in;
			plan->receives = folding_in;
			plan->combines = folding_in && reduces;
		}
	} else if (rank < power) {
		plan->partner = rank ^ (1 << (step - 1));
		plan->sends = plan->receives = true;
		plan->combines = reduces;
	}
	plan->send = operation->result;
	plan->receive = plan->combines ? operation->scratch : operation->result;
	plan->kept = operation->result;
	plan->length = bolt_collective_doubling_bytes(operation);
}

/* All-gather: the 2^(step-1) blocks gathered so far, for the partner's as many. */
static void bolt_collective_doubling_plan_gather(const struct bolt_collective_operation *operation,
						 int step, struct bolt_collective_doubling_step *plan)
{
	size_t block = bolt_collective_doubling_bytes(operation);
	int rank = operation->group->rank, mask = 1 << (step - 1);

	plan->partner = rank ^ mask;
	plan->sends = plan->receives = true;
	plan->send = operation->result + bolt_collective_doubling_base(rank, mask) * block;
	plan->receive = operation->result + bolt_collective_doubling_base(plan->partner, mask) * block;
	plan->length = (size_t) mask * block;
}

/*
 * Reduce-scatter: of the 2 * mask blocks left, the partner's half goes to
 * it, its copy of ours comes back to be combined. scratch holds the working
 * copy of the input, then room for half of it.
 */
static void bolt_collective_doubling_plan_halve(const struct bolt_collective_operation *operation,
						int step, struct bolt_collective_doubling_step *plan)
{
	size_t block = bolt_collective_doubling_bytes(operation);
	int rank = operation->group->rank, size = operation->group->size;
	int mask = size >> step;

	plan->partner = rank ^ mask;
	plan->sends = plan->receives = plan->combines = true;
	plan->send = operation->scratch + bolt_collective_doubling_base(plan->partner, mask) * block;
	plan->receive = operation->scratch + (size_t) size * block;
	plan->kept = operation->scratch + bolt_collective_doubling_base(rank, mask) * block;
	plan->length = (size_t) mask * block;
}

static struct bolt_collective_doubling_step
bolt_collective_doubling_plan(const struct bolt_collective_operation *operation, int step)
{
	struct bolt_collective_doubling_step plan = { .partner = -1 };
	bool fold = step == 0 || step == operation->steps - 1;

	if (operation->kind == FI_ALLREDUCE || operation->kind == FI_BARRIER)
		bolt_collective_doubling_plan_reduce(operation, step, &plan);
	else if (fold)
		;       /* a power of two members: nothing to fold */
	else if (operation->kind == FI_ALLGATHER)
		bolt_collective_doubling_plan_gather(operation, step, &plan);
	else
		bolt_collective_doubling_plan_halve(operation, step, &plan);
	return plan;
}

/* Posts step's transfers; 0 if it has none. */
static int bolt_collective_doubling_post(struct bolt_collective_operation *operation, int step)
{
	struct bolt_collective_doubling_step plan = bolt_collective_doubling_plan(operation, step);
	int ret = 0;

	if (plan.receives)
		ret = bolt_collective_receive(operation, step, plan.partner, plan.receive, plan.length,
					      &operation->waits[0]);
	if (!ret && plan.sends)
		ret = bolt_collective_send(operation, step, plan.partner, plan.send, plan.length);
	return ret;
}

/* The step's transfers are done: the partner's part joins ours, the lower rank's on the left. */
static void bolt_collective_doubling_combine(struct bolt_collective_operation *operation, int step)
{
	struct bolt_collective_doubling_step plan = bolt_collective_doubling_plan(operation, step);
	size_t count;

	if (!plan.combines)
		return;
	count = plan.length / operation->element_size;  /* a barrier, which has none, never combines */
	if (plan.partner < operation->group->rank)
		operation->reduce(plan.kept, plan.receive, plan.kept, count);
	else
		operation->reduce(plan.kept, plan.kept, plan.receive, count);
}

/* A reduce-scatter's own block is what the halving left in scratch. */
static void bolt_collective_doubling_finish(struct bolt_collective_operation *operation)
{
	size_t block = bolt_collective_doubling_bytes(operation);

	if (operation->kind == FI_REDUCE_SCATTER)
		memcpy(operation->result, operation->scratch + (size_t) operation->group->rank * block,
		       block);
}

static bool bolt_collective_doubling_advance(struct bolt_collective_operation *operation)
{
	struct bolt_collective_lane *lane = &operation->lanes[0];
	int ret;

	while (!operation->waits[0].pending && !operation->sends.pending) {
		bolt_collective_doubling_combine(operation, lane->step);
		if (++lane->step == operation->steps) {
			bolt_collective_doubling_finish(operation);
			return true;
		}
		ret = bolt_collective_doubling_post(operation, lane->step);
		if (ret) {
			operation->status = -ret;
			return false;
		}
	}
	return false;
}

/* Scratch: an all-reduce's partner's partial; a reduce-scatter's working copy and half of it. */
static size_t bolt_collective_doubling_scratch(const struct bolt_collective_operation *operation)
{
	size_t bytes = bolt_collective_doubling_bytes(operation);
	size_t size = (size_t) operation->group->size;

	if (operation->kind == FI_REDUCE_SCATTER)
		return size * bytes + size / 2 * bytes;
	return operation->kind == FI_ALLREDUCE ? bytes : 0;
}

/* This member's own data where the steps expect it. */
static void bolt_collective_doubling_place_input(struct bolt_collective_operation *operation)
{
	size_t bytes = bolt_collective_doubling_bytes(operation);
	int rank = operation->group->rank;

	if (operation->kind == FI_ALLREDUCE && operation->input != operation->result)
		memcpy(operation->result, operation->input, bytes);
	else if (operation->kind == FI_ALLGATHER)
		memmove(operation->result + (size_t) rank * bytes, operation->input, bytes);
	else if (operation->kind == FI_REDUCE_SCATTER)
		memcpy(operation->scratch, operation->input, (size_t) operation->group->size * bytes);
}

static int bolt_collective_doubling_start(struct bolt_collective_operation *operation)
{
	size_t scratch = bolt_collective_doubling_scratch(operation);
	int power = bolt_collective_doubling_power(operation->group->size);

	operation->steps = 2;
	while (power > 1) {
		operation->steps++;
		power /= 2;
	}
	operation->waits = calloc(1, sizeof(*operation->waits));
	operation->lanes = calloc(1, sizeof(*operation->lanes));
	if (!operation->waits || !operation->lanes ||
	    bolt_collective_scratch_allocate(operation, scratch))
		return -FI_ENOMEM;
	operation->wait_count = 1;
	operation->waits[0].operation = operation;
	operation->lane_count = 1;
	bolt_collective_doubling_place_input(operation);
	return bolt_collective_doubling_post(operation, 0);
}

const struct bolt_collective_algorithm bolt_collective_doubling = {
	.name = "doubling",
	.start = bolt_collective_doubling_start,
	.advance = bolt_collective_doubling_advance,
};
