/*
 * bolt_collective_ring.c: the pipelined ring, for large all-reduce,
 * reduce-scatter and all-gather. The data is cut into one block per member;
 * each member sends to the next and receives from the previous one.
 * Reduce-scatter takes n-1 steps, after which member r holds block r reduced
 * (one reduction order per block, so every member ends with the same bits);
 * all-gather takes n-1 more steps that pass the finished blocks around.
 * Each member moves 2(n-1)/n of the data, the least any algorithm can.
 *
 * Blocks are cut into segments, and lanes carry segments through all the
 * steps independently, so that several are in flight and receiving one
 * overlaps reducing another (the segment size and lanes are the table's of
 * bolt_collective_algorithm.c). A lane posts every receive of a segment
 * when it starts it: a message then never waits for a receive that depends
 * on a message behind it on the same connection.
 * Received data lands where it is used: in the result, or in scratch where
 * the result cannot hold it (reduce-scatter, or all-reduce in place).
 */
#include <stdlib.h>
#include <string.h>

#include "collective/bolt_collective.h"

static int bolt_collective_ring_rank(const struct bolt_collective_operation *operation, int offset)
{
	int size = operation->group->size;

	return ((operation->group->rank + offset) % size + size) % size;
}

/* Elements of all blocks together. */
static size_t bolt_collective_ring_total(const struct bolt_collective_operation *operation)
{
	return operation->kind == FI_ALLREDUCE ? operation->count :
	       operation->count * (size_t) operation->group->size;
}

static size_t bolt_collective_ring_block_offset(const struct bolt_collective_operation *operation,
						int block)
{
	size_t size = (size_t) operation->group->size;
	size_t base = bolt_collective_ring_total(operation) / size;
	size_t rest = bolt_collective_ring_total(operation) % size;

	return (size_t) block * base + ((size_t) block < rest ? (size_t) block : rest);
}

static size_t bolt_collective_ring_block_length(const struct bolt_collective_operation *operation,
						int block)
{
	return bolt_collective_ring_block_offset(operation, block + 1) -
	       bolt_collective_ring_block_offset(operation, block);
}

/* Elements of a segment of block (segments at a block's end may be short or empty). */
static size_t bolt_collective_ring_segment_length(const struct bolt_collective_operation *operation,
						  int block, size_t segment)
{
	size_t length = bolt_collective_ring_block_length(operation, block);
	size_t start = segment * operation->segment_elements;

	if (start >= length)
		return 0;
	return length - start < operation->segment_elements ? length - start :
	       operation->segment_elements;
}

/* Where a segment of block lies in a buffer holding every block. */
static size_t bolt_collective_ring_position(const struct bolt_collective_operation *operation,
					    int block, size_t segment)
{
	return (bolt_collective_ring_block_offset(operation, block) +
		segment * operation->segment_elements) * operation->element_size;
}

/* The block received at step (reduce-scatter steps first, then all-gather). */
static int bolt_collective_ring_received_block(const struct bolt_collective_operation *operation,
					       int step)
{
	if (step < operation->reduce_steps)
		return bolt_collective_ring_rank(operation, -step - 2);
	return bolt_collective_ring_rank(operation, -(step - operation->reduce_steps) - 1);
}

static bool bolt_collective_ring_uses_scratch(const struct bolt_collective_operation *operation)
{
	return operation->scratch != NULL;
}

/* Where the segment received at step lands. */
static char *bolt_collective_ring_area(const struct bolt_collective_operation *operation, int step,
				       size_t segment)
{
	int block = bolt_collective_ring_received_block(operation, step);

	if (step < operation->reduce_steps && bolt_collective_ring_uses_scratch(operation))
		return operation->scratch + ((size_t) step * operation->block_elements +
					     segment * operation->segment_elements) *
					    operation->element_size;
	return operation->result + bolt_collective_ring_position(operation, block, segment);
}

/* The block sent at step. */
static int bolt_collective_ring_sent_block(const struct bolt_collective_operation *operation,
					   int step)
{
	if (step < operation->reduce_steps)
		return bolt_collective_ring_rank(operation, -step - 1);
	return bolt_collective_ring_rank(operation, -(step - operation->reduce_steps));
}

/*
 * What is sent at step: reduce-scatter starts from the input, then sends what
 * the step before received and reduced; all-gather sends from the result.
 */
static const char *bolt_collective_ring_source(const struct bolt_collective_operation *operation,
					       int step, size_t segment)
{
	int block = bolt_collective_ring_sent_block(operation, step);

	if (step == 0 && operation->reduce_steps)
		return operation->input + bolt_collective_ring_position(operation, block, segment);
	if (step < operation->reduce_steps)
		return bolt_collective_ring_area(operation, step - 1, segment);
	return operation->result + bolt_collective_ring_position(operation, block, segment);
}

static struct bolt_collective_wait *bolt_collective_ring_wait(struct bolt_collective_operation *operation,
							      size_t segment, int step)
{
	return &operation->waits[segment * (size_t) operation->steps + (size_t) step];
}

static int bolt_collective_ring_send(struct bolt_collective_operation *operation, int lane)
{
	struct bolt_collective_lane *state = &operation->lanes[lane];
	int step = state->step;
	int block = bolt_collective_ring_sent_block(operation, step);

	return bolt_collective_send(operation, lane, bolt_collective_ring_rank(operation, 1),
				    bolt_collective_ring_source(operation, step, state->segment),
				    bolt_collective_ring_segment_length(operation, block, state->segment) *
				    operation->element_size);
}

/* A lane takes up its next segment: every receive of it, then the first send. */
static int bolt_collective_ring_enter(struct bolt_collective_operation *operation, int lane)
{
	struct bolt_collective_lane *state = &operation->lanes[lane];
	int previous = bolt_collective_ring_rank(operation, -1);
	int ret = 0;

	state->step = 0;
	for (int step = 0; !ret && step < operation->steps; step++) {
		int block = bolt_collective_ring_received_block(operation, step);

		ret = bolt_collective_receive(operation, lane, previous,
					      bolt_collective_ring_area(operation, step, state->segment),
					      bolt_collective_ring_segment_length(operation, block,
										  state->segment) *
					      operation->element_size,
					      bolt_collective_ring_wait(operation, state->segment, step));
	}
	return ret ? ret : bolt_collective_ring_send(operation, lane);
}

/* The segment received at a reduce-scatter step is combined with this member's input. */
static void bolt_collective_ring_reduce(struct bolt_collective_operation *operation, int step,
					size_t segment)
{
	int block = bolt_collective_ring_received_block(operation, step);
	size_t length = bolt_collective_ring_segment_length(operation, block, segment);
	char *area = bolt_collective_ring_area(operation, step, segment);
	const char *input = operation->input + bolt_collective_ring_position(operation, block, segment);
	char *destination = area;

	if (step == operation->reduce_steps - 1)
		destination = operation->kind == FI_REDUCE_SCATTER ?
			      operation->result + segment * operation->segment_elements *
			      operation->element_size :
			      operation->result + bolt_collective_ring_position(operation, block, segment);
	if (length)
		operation->reduce(destination, area, input, length);
}

/* Moves a lane on while its receives are in; false if it waits. */
static bool bolt_collective_ring_advance_lane(struct bolt_collective_operation *operation, int lane)
{
	struct bolt_collective_lane *state = &operation->lanes[lane];
	int ret = 0;

	while (!state->done && !ret &&
	       !bolt_collective_ring_wait(operation, state->segment, state->step)->pending) {
		if (state->step < operation->reduce_steps)
			bolt_collective_ring_reduce(operation, state->step, state->segment);
		if (++state->step < operation->steps) {
			ret = bolt_collective_ring_send(operation, lane);
			continue;
		}
		state->segment += (size_t) operation->lane_count;
		if (state->segment >= operation->segment_count)
			state->done = true;
		else
			ret = bolt_collective_ring_enter(operation, lane);
	}
	if (ret && !operation->status)
		operation->status = -ret;
	return state->done;
}

static bool bolt_collective_ring_advance(struct bolt_collective_operation *operation)
{
	bool done = true;

	for (int lane = 0; lane < operation->lane_count && !operation->status; lane++)
		done &= bolt_collective_ring_advance_lane(operation, lane);
	return done && !operation->status && !operation->sends.pending;
}

/* Segments, lanes, scratch and waits from the operation's size and the table's choice. */
static int bolt_collective_ring_layout(struct bolt_collective_operation *operation)
{
	int size = operation->group->size;
	bool in_place = operation->input == operation->result;
	size_t scratch_blocks;
	int ret;

	operation->reduce_steps = operation->kind == FI_ALLGATHER ? 0 : size - 1;
	operation->steps = operation->reduce_steps + (operation->kind == FI_REDUCE_SCATTER ? 0 : size - 1);
	operation->block_elements = bolt_collective_ring_block_length(operation, 0);
	operation->segment_elements = operation->segment_size / operation->element_size;
	if (!operation->segment_elements)
		operation->segment_elements = 1;
	operation->segment_count = (operation->block_elements + operation->segment_elements - 1) /
				   operation->segment_elements;
	operation->lane_count = operation->lane_limit > 0 ? operation->lane_limit : 1;
	if ((size_t) operation->lane_count > operation->segment_count)
		operation->lane_count = (int) operation->segment_count;
	scratch_blocks = operation->kind == FI_REDUCE_SCATTER ||
			 (operation->kind == FI_ALLREDUCE && in_place) ? (size_t) size - 1 : 0;
	ret = bolt_collective_scratch_allocate(operation, scratch_blocks * operation->block_elements *
						    operation->element_size);
	if (ret)
		return ret;
	operation->wait_count = operation->segment_count * (size_t) operation->steps;
	/* One more of each than needed: an empty operation still gets its arrays. */
	operation->waits = calloc(operation->wait_count + 1, sizeof(*operation->waits));
	operation->lanes = calloc((size_t) operation->lane_count + 1, sizeof(*operation->lanes));
	if (!operation->waits || !operation->lanes)
		return -FI_ENOMEM;
	for (size_t i = 0; i < operation->wait_count; i++)
		operation->waits[i].operation = operation;
	return 0;
}

static int bolt_collective_ring_start(struct bolt_collective_operation *operation)
{
	int ret = bolt_collective_ring_layout(operation);

	if (ret)
		return ret;
	/* All-gather starts from this member's own block in the result. */
	if (operation->kind == FI_ALLGATHER)
		memmove(operation->result + bolt_collective_ring_position(operation, operation->group->rank, 0),
			operation->input, operation->count * operation->element_size);
	for (int lane = 0; !ret && lane < operation->lane_count; lane++) {
		operation->lanes[lane].segment = (size_t) lane;
		ret = bolt_collective_ring_enter(operation, lane);
	}
	return ret;
}

const struct bolt_collective_algorithm bolt_collective_ring = {
	.name = "ring",
	.start = bolt_collective_ring_start,
	.advance = bolt_collective_ring_advance,
};
