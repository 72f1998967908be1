/*
 * bolt_collective_scratch.c: the scratch an operation receives into where
 * its result cannot hold what comes, and the spare the endpoint keeps of it.
 * Scratch outlives its operation as the endpoint's spare: a new one of
 * 32 MiB or more is mapped afresh (glibc's largest mmap threshold), and the
 * device's writes then fault its pages in one at a time. A 64 MiB
 * reduce-scatter of four members took 430 ms so, 50 ms with the pages kept.
 * Scratch from 512 KiB on sits on huge pages (bolt_platform_huge_allocate),
 * as the applications' large buffers usually do: on 4 KiB pages,
 * reduce-scatters of 2 to 4 members took 1.1 to 2 times as long from 1 MiB
 * to 64 MiB; smaller scratch gained nothing measurable.
 */
#include <stdlib.h>

#include "collective/bolt_collective.h"
#include "platform/bolt_platform.h"

#define BOLT_COLLECTIVE_SCRATCH_HUGE ((size_t) 512 << 10)

int bolt_collective_scratch_allocate(struct bolt_collective_operation *operation, size_t size)
{
	struct bolt_collective_endpoint *state = bolt_collective_state(operation->group->endpoint);

	if (!size)
		return 0;
	if (state->spare_scratch && state->spare_scratch_size >= size) {
		operation->scratch = state->spare_scratch;
		operation->scratch_size = state->spare_scratch_size;
		state->spare_scratch = NULL;
		return 0;
	}
	operation->scratch = size >= BOLT_COLLECTIVE_SCRATCH_HUGE ? bolt_platform_huge_allocate(size) :
			     calloc(1, size);
	if (!operation->scratch)
		return -FI_ENOMEM;
	operation->scratch_size = size;
	return 0;
}

/* The larger of the spare and operation's scratch stays; none once the group is gone. */
void bolt_collective_scratch_free(struct bolt_collective_operation *operation)
{
	struct bolt_collective_endpoint *state;

	if (!operation->group || !operation->scratch) {
		free(operation->scratch);
		return;
	}
	state = bolt_collective_state(operation->group->endpoint);
	if (state->spare_scratch_size > operation->scratch_size) {
		free(operation->scratch);
		return;
	}
	free(state->spare_scratch);
	state->spare_scratch = operation->scratch;
	state->spare_scratch_size = operation->scratch_size;
}

void bolt_collective_scratch_release_spare(struct bolt_collective_endpoint *state)
{
	free(state->spare_scratch);
	state->spare_scratch = NULL;
	state->spare_scratch_size = 0;
}
