/*
 * bolt_collective_direct.c: the fully connected algorithm, for small
 * messages and for the collectives that only move data: every member sends
 * what each other member needs straight to it, in one round, and reductions
 * are applied locally in rank order, so that every member computes the same
 * bits. Also runs the join, as a barrier.
 */
#include <stdlib.h>
#include <string.h>

#include "collective/bolt_collective.h"

static size_t bolt_collective_direct_bytes(const struct bolt_collective_operation *operation)
{
	return operation->count * operation->element_size;
}

/* Broadcast goes from the root only; everything else between every pair. */
static bool bolt_collective_direct_talks(const struct bolt_collective_operation *operation,
					 int sender, int receiver)
{
	return sender != receiver && (operation->kind != FI_BROADCAST || sender == operation->root);
}

/* What this member sends to rank. */
static const char *bolt_collective_direct_source(const struct bolt_collective_operation *operation,
						 int rank)
{
	size_t bytes = bolt_collective_direct_bytes(operation);

	switch (operation->kind) {
	case FI_BROADCAST:
		return operation->result;
	case FI_ALLTOALL:
		/* In place, the input was copied aside: the receives overwrite it. */
		return (operation->scratch ? operation->scratch : operation->input) + rank * bytes;
	case FI_REDUCE_SCATTER:
		return operation->input + rank * bytes;
	case FI_ALLREDUCE:
	case FI_ALLGATHER:
		return operation->input;
	default:
		return NULL;
	}
}

/* Where the message from rank lands. */
static char *bolt_collective_direct_target(const struct bolt_collective_operation *operation,
					   int rank)
{
	size_t bytes = bolt_collective_direct_bytes(operation);

	switch (operation->kind) {
	case FI_ALLTOALL:
	case FI_ALLGATHER:
		return operation->result + rank * bytes;
	case FI_ALLREDUCE:
	case FI_REDUCE_SCATTER:
		return operation->scratch + rank * bytes;
	default:
		return operation->result;
	}
}

static int bolt_collective_direct_scratch(struct bolt_collective_operation *operation)
{
	size_t bytes = bolt_collective_direct_bytes(operation);
	size_t size = 0;
	int ret;

	if (operation->kind == FI_ALLREDUCE || operation->kind == FI_REDUCE_SCATTER)
		size = operation->group->size * bytes;
	else if (operation->kind == FI_ALLTOALL && operation->input == operation->result)
		size = operation->group->size * bytes;
	ret = bolt_collective_scratch_allocate(operation, size);
	if (!ret && size && operation->kind == FI_ALLTOALL)
		memcpy(operation->scratch, operation->input, size);
	return ret;
}

static int bolt_collective_direct_start(struct bolt_collective_operation *operation)
{
	struct bolt_collective_group *group = operation->group;
	size_t bytes = operation->kind == FI_BARRIER ? 0 : bolt_collective_direct_bytes(operation);
	int ret;

	operation->waits = calloc(1, sizeof(*operation->waits));
	if (!operation->waits)
		return -FI_ENOMEM;
	operation->wait_count = 1;
	operation->waits[0].operation = operation;
	ret = bolt_collective_direct_scratch(operation);
	for (int rank = 0; !ret && rank < group->size; rank++) {
		if (bolt_collective_direct_talks(operation, rank, group->rank))
			ret = bolt_collective_receive(operation, 0, rank,
						      bolt_collective_direct_target(operation, rank),
						      bytes, &operation->waits[0]);
	}
	for (int rank = 0; !ret && rank < group->size; rank++) {
		if (bolt_collective_direct_talks(operation, group->rank, rank))
			ret = bolt_collective_send(operation, 0, rank,
						   bolt_collective_direct_source(operation, rank), bytes);
	}
	return ret;
}

/* result = the members' blocks in scratch, combined in rank order. */
static void bolt_collective_direct_reduce(struct bolt_collective_operation *operation)
{
	size_t bytes = bolt_collective_direct_bytes(operation);
	const char *scratch = operation->scratch;
	int size = operation->group->size;

	if (size == 1) {
		memmove(operation->result, scratch, bytes);
		return;
	}
	operation->reduce(operation->result, scratch, scratch + bytes, operation->count);
	for (int rank = 2; rank < size; rank++)
		operation->reduce(operation->result, operation->result, scratch + rank * bytes,
				  operation->count);
}

/* This member's own part, once every transfer is done (the sends read the input). */
static void bolt_collective_direct_finish(struct bolt_collective_operation *operation)
{
	size_t bytes = bolt_collective_direct_bytes(operation);
	int rank = operation->group->rank;

	switch (operation->kind) {
	case FI_ALLGATHER:
		memmove(operation->result + rank * bytes, operation->input, bytes);
		break;
	case FI_ALLTOALL:
		memmove(operation->result + rank * bytes,
			bolt_collective_direct_source(operation, rank), bytes);
		break;
	case FI_ALLREDUCE:
		memcpy(operation->scratch + rank * bytes, operation->input, bytes);
		bolt_collective_direct_reduce(operation);
		break;
	case FI_REDUCE_SCATTER:
		memcpy(operation->scratch + rank * bytes, operation->input + rank * bytes, bytes);
		bolt_collective_direct_reduce(operation);
		break;
	default:
		break;
	}
}

static bool bolt_collective_direct_advance(struct bolt_collective_operation *operation)
{
	if (operation->waits[0].pending || operation->sends.pending)
		return false;
	bolt_collective_direct_finish(operation);
	return true;
}

const struct bolt_collective_algorithm bolt_collective_direct = {
	.name = "direct",
	.start = bolt_collective_direct_start,
	.advance = bolt_collective_direct_advance,
};
