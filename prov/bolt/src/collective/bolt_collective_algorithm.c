/*
 * bolt_collective_algorithm.c: which algorithm runs an operation. Few round
 * trips matter for small messages: the fully connected algorithm sends
 * everything in one round. In larger groups the number of messages matters
 * too, where ranks share cores: recursive doubling sends n log2(n) instead
 * of n(n-1), in log2(n) rounds (FI_BOLT_COLLECTIVE_DOUBLING_MEMBERS).
 * Bandwidth matters for large messages: the pipelined ring moves the least
 * data. FI_BOLT_COLLECTIVE_RING_THRESHOLD is where the others give way to it.
 */
#include "collective/bolt_collective.h"

/* Bytes the operation reduces or gathers in all: what the choice is made on. */
static size_t bolt_collective_algorithm_bytes(const struct bolt_collective_operation *operation)
{
	size_t bytes = operation->count * operation->element_size;

	return operation->kind == FI_ALLREDUCE ? bytes : bytes * (size_t) operation->group->size;
}

const struct bolt_collective_algorithm *
bolt_collective_algorithm_choose(const struct bolt_collective_operation *operation)
{
	const struct bolt_params *params = &operation->group->endpoint->domain->fabric->params;
	bool ring_capable = operation->kind == FI_ALLREDUCE || operation->kind == FI_ALLGATHER ||
			    operation->kind == FI_REDUCE_SCATTER;
	bool doubling_capable = operation->kind == FI_BARRIER || operation->kind == FI_ALLREDUCE;
	bool small = bolt_collective_algorithm_bytes(operation) <
		     (size_t) params->collective_ring_threshold;

	if (operation->group->size < 2)
		return &bolt_collective_direct;
	if (doubling_capable && (small || operation->kind == FI_BARRIER) &&
	    operation->group->size >= params->collective_doubling_members)
		return &bolt_collective_doubling;
	if (!ring_capable || small ||
	    (operation->kind == FI_REDUCE_SCATTER && operation->input == operation->result))
		return &bolt_collective_direct;
	return &bolt_collective_ring;
}
