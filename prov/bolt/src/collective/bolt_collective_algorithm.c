/*
 * bolt_collective_algorithm.c: which algorithm runs an operation. Few round
 * trips matter for small messages: the fully connected algorithm sends
 * everything in one round. Bandwidth matters for large ones: the pipelined
 * ring moves the least data. FI_BOLT_COLLECTIVE_RING_THRESHOLD is where one
 * gives way to the other.
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

	if (!ring_capable || operation->group->size < 2 ||
	    (operation->kind == FI_REDUCE_SCATTER && operation->input == operation->result))
		return &bolt_collective_direct;
	if (bolt_collective_algorithm_bytes(operation) < (size_t) params->collective_ring_threshold)
		return &bolt_collective_direct;
	return &bolt_collective_ring;
}
