/*
 * bolt_collective_doubling.c: recursive doubling, for small all-reduces and
 * barriers. In each of log2(n) steps a member swaps its partial result with
 * the member whose rank differs from its own in one bit, and combines the
 * two. That is n log2(n) messages in all, where the fully connected
 * algorithm sends n(n-1): when ranks share cores, the messages are the cost.
 * Both partners put the lower rank's partial on the left, so they compute
 * the same bits, and every member ends with the same bits.
 *
 * Where n is not a power of two, each member r beyond the largest power p
 * first hands its input to member r - p, which combines it with its own,
 * and takes the result back at the end. Steps are numbered for every member
 * alike: 0 folds in, 1 to log2(p) double, the last folds out. A step's
 * number is its messages' lane, so messages of different steps between the
 * same two members never match each other's receives.
 */
#include <stdlib.h>
#include <string.h>

#include "collective/bolt_collective.h"

/* What a member does in one step. */
struct bolt_collective_doubling_step {
	int partner;            /* -1: nothing this step */
	bool sends;             /* its partial result, to partner */
	bool receives;          /* partner's, into scratch (or the result, folding out) */
	bool combines;          /* scratch into the result, once both are done */
};

static int bolt_collective_doubling_power(int size)
{
	int power = 1;

	while (power <= size / 2)
		power *= 2;
	return power;
}

static size_t bolt_collective_doubling_bytes(const struct bolt_collective_operation *operation)
{
	return operation->kind == FI_BARRIER ? 0 : operation->count * operation->element_size;
}

static struct bolt_collective_doubling_step
bolt_collective_doubling_plan(const struct bolt_collective_operation *operation, int step)
{
	struct bolt_collective_doubling_step plan = { .partner = -1 };
	int rank = operation->group->rank, size = operation->group->size;
	int power = bolt_collective_doubling_power(size), extra = size - power;
	bool reduces = operation->kind != FI_BARRIER;

	if (step == 0 || step == operation->steps - 1) {
		bool folding_in = step == 0;

		if (rank >= power) {
			plan.partner = rank - power;
			plan.sends = folding_in;
			plan.receives = !folding_in;
		} else if (rank < extra) {
			plan.partner = rank + power;
			plan.sends = !folding_in;
			plan.receives = folding_in;
			plan.combines = folding_in && reduces;
		}
	} else if (rank < power) {
		plan.partner = rank ^ (1 << (step - 1));
		plan.sends = plan.receives = true;
		plan.combines = reduces;
	}
	return plan;
}

/* Posts step's transfers; 0 if it has none. */
static int bolt_collective_doubling_post(struct bolt_collective_operation *operation, int step)
{
	struct bolt_collective_doubling_step plan = bolt_collective_doubling_plan(operation, step);
	size_t bytes = bolt_collective_doubling_bytes(operation);
	int ret = 0;

	if (plan.receives)
		ret = bolt_collective_receive(operation, step, plan.partner,
					      plan.combines ? operation->scratch : operation->result,
					      bytes, &operation->waits[0]);
	if (!ret && plan.sends)
		ret = bolt_collective_send(operation, step, plan.partner, operation->result, bytes);
	return ret;
}

/* The step's transfers are done: the partner's partial joins ours, the lower rank's on the left. */
static void bolt_collective_doubling_combine(struct bolt_collective_operation *operation, int step)
{
	struct bolt_collective_doubling_step plan = bolt_collective_doubling_plan(operation, step);

	if (!plan.combines)
		return;
	if (plan.partner < operation->group->rank)
		operation->reduce(operation->result, operation->scratch, operation->result,
				  operation->count);
	else
		operation->reduce(operation->result, operation->result, operation->scratch,
				  operation->count);
}

static bool bolt_collective_doubling_advance(struct bolt_collective_operation *operation)
{
	struct bolt_collective_lane *lane = &operation->lanes[0];
	int ret;

	while (!operation->waits[0].pending && !operation->sends.pending) {
		bolt_collective_doubling_combine(operation, lane->step);
		if (++lane->step == operation->steps)
			return true;
		ret = bolt_collective_doubling_post(operation, lane->step);
		if (ret) {
			operation->status = -ret;
			return false;
		}
	}
	return false;
}

static int bolt_collective_doubling_start(struct bolt_collective_operation *operation)
{
	size_t bytes = bolt_collective_doubling_bytes(operation);
	int power = bolt_collective_doubling_power(operation->group->size);

	operation->steps = 2;
	while (power > 1) {
		operation->steps++;
		power /= 2;
	}
	operation->waits = calloc(1, sizeof(*operation->waits));
	operation->lanes = calloc(1, sizeof(*operation->lanes));
	if (!operation->waits || !operation->lanes ||
	    bolt_collective_scratch_allocate(operation, operation->kind == FI_ALLREDUCE ? bytes : 0))
		return -FI_ENOMEM;
	operation->wait_count = 1;
	operation->waits[0].operation = operation;
	operation->lane_count = 1;
	if (bytes && operation->input != operation->result)
		memcpy(operation->result, operation->input, bytes);
	return bolt_collective_doubling_post(operation, 0);
}

const struct bolt_collective_algorithm bolt_collective_doubling = {
	.name = "doubling",
	.start = bolt_collective_doubling_start,
	.advance = bolt_collective_doubling_advance,
};
