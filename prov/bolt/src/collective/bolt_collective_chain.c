/*
 * bolt_collective_chain.c: the pipelined chain, for large broadcasts. The
 * members line up from the root in rank order (root, root + 1, ...); the
 * data is cut into segments, and each member passes a segment on to the
 * next as soon as it has it. The root sends the data once, where the fully
 * connected broadcast sends it n-1 times: on a device whose writer copies
 * (as the software device's does), the copies of the hops then run side by
 * side instead of one after another at the root.
 *
 * A member posts a receive for every segment when it starts, in order; its
 * predecessor sends them in order with one tag, so each lands in its own
 * receive. The segment size is the table's of bolt_collective_algorithm.c.
 */
#include <stdlib.h>

#include "collective/bolt_collective.h"

/* Where this member is in the chain: 0 for the root. */
static int bolt_collective_chain_position(const struct bolt_collective_operation *operation)
{
	int size = operation->group->size;

	return (operation->group->rank - operation->root + size) % size;
}

static bool bolt_collective_chain_has_successor(const struct bolt_collective_operation *operation)
{
	return bolt_collective_chain_position(operation) < operation->group->size - 1;
}

static int bolt_collective_chain_neighbour(const struct bolt_collective_operation *operation,
					   int offset)
{
	int size = operation->group->size;

	return (operation->group->rank + offset + size) % size;
}

static size_t bolt_collective_chain_bytes(const struct bolt_collective_operation *operation)
{
	return operation->count * operation->element_size;
}

/* Bytes of segment: the last one may be short. */
static size_t bolt_collective_chain_segment_length(const struct bolt_collective_operation *operation,
						   size_t segment)
{
	size_t start = segment * operation->segment_size;
	size_t bytes = bolt_collective_chain_bytes(operation);

	return bytes - start < operation->segment_size ? bytes - start : operation->segment_size;
}

static int bolt_collective_chain_forward(struct bolt_collective_operation *operation, size_t segment)
{
	return bolt_collective_send(operation, 0, bolt_collective_chain_neighbour(operation, 1),
				    operation->result + segment * operation->segment_size,
				    bolt_collective_chain_segment_length(operation, segment));
}

/* Passes on, in order, the segments that arrived; true once every segment is in and passed on. */
static bool bolt_collective_chain_advance(struct bolt_collective_operation *operation)
{
	struct bolt_collective_lane *lane = &operation->lanes[0];
	int ret;

	while (lane->segment < operation->segment_count &&
	       !operation->waits[lane->segment].pending) {
		if (bolt_collective_chain_has_successor(operation)) {
			ret = bolt_collective_chain_forward(operation, lane->segment);
			if (ret) {
				operation->status = -ret;
				return false;
			}
		}
		lane->segment++;
	}
	return lane->segment == operation->segment_count && !operation->sends.pending;
}

static int bolt_collective_chain_start(struct bolt_collective_operation *operation)
{
	size_t bytes = bolt_collective_chain_bytes(operation);
	bool root = !bolt_collective_chain_position(operation);
	int ret = 0;

	if (!operation->segment_size)
		operation->segment_size = bytes ? bytes : 1;
	operation->segment_count = (bytes + operation->segment_size - 1) / operation->segment_size;
	operation->wait_count = operation->segment_count;
	/* One more of each than needed: an empty operation still gets its arrays. */
	operation->waits = calloc(operation->wait_count + 1, sizeof(*operation->waits));
	operation->lanes = calloc(1, sizeof(*operation->lanes));
	if (!operation->waits || !operation->lanes)
		return -FI_ENOMEM;
	operation->lane_count = 1;
	for (size_t segment = 0; segment < operation->wait_count; segment++)
		operation->waits[segment].operation = operation;
	for (size_t segment = 0; segment < operation->segment_count; segment++) {
		if (!root)
			ret = bolt_collective_receive(operation, 0,
						      bolt_collective_chain_neighbour(operation, -1),
						      operation->result + segment * operation->segment_size,
						      bolt_collective_chain_segment_length(operation, segment),
						      &operation->waits[segment]);
		else if (bolt_collective_chain_has_successor(operation))
			ret = bolt_collective_chain_forward(operation, segment);
		if (ret)
			return ret;
	}
	/* The root's segments are all sent: nothing of its own to pass on. */
	if (root)
		operation->lanes[0].segment = operation->segment_count;
	return 0;
}

const struct bolt_collective_algorithm bolt_collective_chain = {
	.name = "chain",
	.start = bolt_collective_chain_start,
	.advance = bolt_collective_chain_advance,
};
