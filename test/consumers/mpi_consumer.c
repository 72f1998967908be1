/*
 * mpi_consumer.c: an MPI program that exercises what Open MPI's ofi MTL asks
 * of bolt: broadcast, all-reduce, all-gather, a send/receive ring from 0 B to
 * 8 MiB, receives from any source, probes (blocking, non-blocking, matched)
 * and sends to self. Every result is checked against what each rank can
 * compute on its own; rank 0 prints one line per check and the verdict, and
 * the exit status is 0 only when every rank passed every check. With the
 * argument "thread-multiple" it asks for MPI_THREAD_MULTIPLE (the MTL then
 * asks bolt for FI_THREAD_SAFE) and a second thread runs its own ring on a
 * communicator of its own while the checks run.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define RING_MAX_BYTES (8u << 20)
#define COLLECTIVE_COUNT (256u * 1024)  /* elements: 1 MiB of int32, 2 MiB of double */
#define PROBE_TAG 77
#define ANY_SOURCE_TAG 78
#define SELF_TAG 79

/* The byte at offset of what rank sends in round; any rank can compute it. */
static uint8_t pattern_byte(int rank, unsigned int round, size_t offset)
{
	uint32_t value = (uint32_t) offset * 2654435761u + (uint32_t) rank * 40503u + round * 97u;

	return (uint8_t) (value >> 13);
}

static void pattern_fill(uint8_t *buffer, size_t length, int rank, unsigned int round)
{
	for (size_t i = 0; i < length; i++)
		buffer[i] = pattern_byte(rank, round, i);
}

/* The offset of the first wrong byte, or length when all are right. */
static size_t pattern_first_wrong(const uint8_t *buffer, size_t length, int rank,
				  unsigned int round)
{
	for (size_t i = 0; i < length; i++)
		if (buffer[i] != pattern_byte(rank, round, i))
			return i;
	return length;
}

struct context {
	int rank;
	int size;
	int failures;           /* this rank's failed checks */
	uint8_t *send_buffer;
	uint8_t *receive_buffer;
};

static void check(struct context *context, int passed, const char *what)
{
	int all_passed;

	if (!passed) {
		fprintf(stderr, "mpi_consumer: rank %d: FAILED: %s\n", context->rank, what);
		context->failures++;
	}
	MPI_Allreduce(&passed, &all_passed, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	if (context->rank == 0)
		printf("mpi_consumer: %s: %s\n", what, all_passed ? "ok" : "FAILED");
}

static void check_broadcast(struct context *context, int root, size_t length)
{
	char what[96];
	int ok;

	if (context->rank == root)
		pattern_fill(context->receive_buffer, length, root, 1);
	else
		memset(context->receive_buffer, 0, length);
	MPI_Bcast(context->receive_buffer, (int) length, MPI_BYTE, root, MPI_COMM_WORLD);
	ok = pattern_first_wrong(context->receive_buffer, length, root, 1) == length;
	snprintf(what, sizeof(what), "broadcast of %zu bytes from rank %d", length, root);
	check(context, ok, what);
}

static void check_allreduce_int(struct context *context, size_t count)
{
	int32_t *mine = (int32_t *) context->send_buffer;
	int32_t *sum = (int32_t *) context->receive_buffer;
	int64_t ranks_sum = (int64_t) context->size * (context->size - 1) / 2;
	char what[96];
	int ok = 1;

	for (size_t i = 0; i < count; i++)
		mine[i] = (int32_t) (i % 1000) * (context->rank + 1) + context->rank;
	MPI_Allreduce(mine, sum, (int) count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
	for (size_t i = 0; i < count && ok; i++) {
		int64_t expected = (int64_t) (i % 1000) * (ranks_sum + context->size) + ranks_sum;

		ok = sum[i] == expected;
	}
	snprintf(what, sizeof(what), "all-reduce (sum) of %zu int32", count);
	check(context, ok, what);
}

static void check_allreduce_double_max(struct context *context, size_t count)
{
	double *mine = (double *) context->send_buffer;
	double *largest = (double *) context->receive_buffer;
	char what[96];
	int ok = 1;

	/* Element i is largest on rank i % size. */
	for (size_t i = 0; i < count; i++)
		mine[i] = (double) i + ((int) (i % context->size) == context->rank ? 0.5 : 0.0);
	MPI_Allreduce(mine, largest, (int) count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	for (size_t i = 0; i < count && ok; i++)
		ok = largest[i] == (double) i + 0.5;
	snprintf(what, sizeof(what), "all-reduce (max) of %zu double", count);
	check(context, ok, what);
}

static void check_allgather(struct context *context, size_t block)
{
	char what[96];
	int ok = 1;

	pattern_fill(context->send_buffer, block, context->rank, 2);
	memset(context->receive_buffer, 0, block * context->size);
	MPI_Allgather(context->send_buffer, (int) block, MPI_BYTE, context->receive_buffer,
		      (int) block, MPI_BYTE, MPI_COMM_WORLD);
	for (int source = 0; source < context->size && ok; source++)
		ok = pattern_first_wrong(context->receive_buffer + block * source, block, source, 2) ==
		     block;
	snprintf(what, sizeof(what), "all-gather of %zu bytes per rank", block);
	check(context, ok, what);
}

/* Each rank sends length bytes to the next and receives from the previous. */
static void check_ring(struct context *context, size_t length, unsigned int round)
{
	int next = (context->rank + 1) % context->size;
	int previous = (context->rank + context->size - 1) % context->size;
	MPI_Request request;
	MPI_Status status;
	char what[96];
	int count = -1;
	int ok;

	pattern_fill(context->send_buffer, length, context->rank, round);
	memset(context->receive_buffer, 0xEE, length + 1);
	MPI_Irecv(context->receive_buffer, (int) length, MPI_BYTE, previous, (int) round,
		  MPI_COMM_WORLD, &request);
	MPI_Send(context->send_buffer, (int) length, MPI_BYTE, next, (int) round, MPI_COMM_WORLD);
	MPI_Wait(&request, &status);
	MPI_Get_count(&status, MPI_BYTE, &count);
	ok = count == (int) length && status.MPI_SOURCE == previous &&
	     status.MPI_TAG == (int) round &&
	     pattern_first_wrong(context->receive_buffer, length, previous, round) == length &&
	     context->receive_buffer[length] == 0xEE;
	snprintf(what, sizeof(what), "ring send/receive of %zu bytes", length);
	check(context, ok, what);
}

/* Rank 0 receives one message from every other rank with MPI_ANY_SOURCE. */
static void check_any_source(struct context *context)
{
	int ok = 1;

	if (context->rank != 0) {
		int32_t value[2] = { context->rank, context->rank * 1000 + 7 };

		MPI_Send(value, 2, MPI_INT32_T, 0, ANY_SOURCE_TAG, MPI_COMM_WORLD);
	} else {
		int seen[64] = { 0 };

		for (int i = 1; i < context->size && ok; i++) {
			int32_t value[2];
			MPI_Status status;

			MPI_Recv(value, 2, MPI_INT32_T, MPI_ANY_SOURCE, ANY_SOURCE_TAG,
				 MPI_COMM_WORLD, &status);
			ok = status.MPI_SOURCE > 0 && status.MPI_SOURCE < context->size &&
			     status.MPI_SOURCE < 64 && !seen[status.MPI_SOURCE] &&
			     value[0] == status.MPI_SOURCE && value[1] == value[0] * 1000 + 7;
			if (ok)
				seen[status.MPI_SOURCE] = 1;
		}
	}
	check(context, ok, "receives from any source");
}

/* Receives what status describes and checks it is source's pattern of round. */
static int receive_probed(struct context *context, const MPI_Status *status, unsigned int round,
			  size_t length)
{
	int count = -1;

	MPI_Get_count(status, MPI_BYTE, &count);
	if (count != (int) length)
		return 0;
	MPI_Recv(context->receive_buffer, count, MPI_BYTE, status->MPI_SOURCE, status->MPI_TAG,
		 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return pattern_first_wrong(context->receive_buffer, length, status->MPI_SOURCE, round) ==
	       length;
}

/*
 * Before anything is sent, MPI_Iprobe finds nothing (the provider's probe
 * completes with FI_ENOMSG); then every rank sends to the next one, which
 * finds the message with MPI_Iprobe, MPI_Probe and MPI_Improbe in turn.
 */
static void check_probes(struct context *context)
{
	int next = (context->rank + 1) % context->size;
	int previous = (context->rank + context->size - 1) % context->size;
	size_t lengths[3] = { 100, 5000, 200000 };
	MPI_Message message;
	MPI_Status status;
	int flag = 1;
	int ok;

	MPI_Iprobe(MPI_ANY_SOURCE, PROBE_TAG, MPI_COMM_WORLD, &flag, &status);
	ok = !flag;
	MPI_Barrier(MPI_COMM_WORLD);
	check(context, ok, "MPI_Iprobe with nothing to find");

	for (unsigned int i = 0; i < 3; i++) {
		pattern_fill(context->send_buffer, lengths[i], context->rank, 10 + i);
		MPI_Request request;

		MPI_Isend(context->send_buffer, (int) lengths[i], MPI_BYTE, next, PROBE_TAG,
			  MPI_COMM_WORLD, &request);
		flag = 0;
		if (i == 0) {
			while (!flag)
				MPI_Iprobe(MPI_ANY_SOURCE, PROBE_TAG, MPI_COMM_WORLD, &flag, &status);
			ok = status.MPI_SOURCE == previous && receive_probed(context, &status, 10 + i,
									      lengths[i]);
		} else if (i == 1) {
			MPI_Probe(previous, PROBE_TAG, MPI_COMM_WORLD, &status);
			ok = status.MPI_SOURCE == previous && receive_probed(context, &status, 10 + i,
									      lengths[i]);
		} else {
			int count = -1;

			while (!flag)
				MPI_Improbe(MPI_ANY_SOURCE, PROBE_TAG, MPI_COMM_WORLD, &flag, &message,
					    &status);
			MPI_Get_count(&status, MPI_BYTE, &count);
			MPI_Mrecv(context->receive_buffer, count, MPI_BYTE, &message, &status);
			ok = status.MPI_SOURCE == previous && count == (int) lengths[i] &&
			     pattern_first_wrong(context->receive_buffer, lengths[i], previous,
						 10 + i) == lengths[i];
		}
		MPI_Wait(&request, MPI_STATUS_IGNORE);
		check(context, ok, i == 0 ? "MPI_Iprobe then MPI_Recv" :
		      i == 1 ? "MPI_Probe then MPI_Recv" : "MPI_Improbe then MPI_Mrecv");
	}
}

/* A message to itself goes through the provider like any other. */
static void check_self(struct context *context)
{
	size_t length = 70000;
	MPI_Status status;
	int count = -1;
	int ok;

	pattern_fill(context->send_buffer, length, context->rank, 20);
	MPI_Sendrecv(context->send_buffer, (int) length, MPI_BYTE, context->rank, SELF_TAG,
		     context->receive_buffer, (int) length, MPI_BYTE, context->rank, SELF_TAG,
		     MPI_COMM_WORLD, &status);
	MPI_Get_count(&status, MPI_BYTE, &count);
	ok = count == (int) length &&
	     pattern_first_wrong(context->receive_buffer, length, context->rank, 20) == length;
	check(context, ok, "send to self");
}

#define SIDE_RING_ROUNDS 200
#define SIDE_RING_BYTES 10000

struct side_ring {
	MPI_Comm comm;
	int rank;
	int size;
	int failures;
};

/* The second thread: a ring of its own, every message checked. */
static void *side_ring_run(void *argument)
{
	struct side_ring *ring = argument;
	uint8_t *out = malloc(SIDE_RING_BYTES), *in = malloc(SIDE_RING_BYTES);
	int next = (ring->rank + 1) % ring->size;
	int previous = (ring->rank + ring->size - 1) % ring->size;

	if (!out || !in) {
		ring->failures++;
		free(out);
		free(in);
		return NULL;
	}
	for (unsigned int round = 0; round < SIDE_RING_ROUNDS; round++) {
		MPI_Request request;

		pattern_fill(out, SIDE_RING_BYTES, ring->rank, 1000 + round);
		MPI_Irecv(in, SIDE_RING_BYTES, MPI_BYTE, previous, 5, ring->comm, &request);
		MPI_Send(out, SIDE_RING_BYTES, MPI_BYTE, next, 5, ring->comm);
		MPI_Wait(&request, MPI_STATUS_IGNORE);
		if (pattern_first_wrong(in, SIDE_RING_BYTES, previous, 1000 + round) != SIDE_RING_BYTES)
			ring->failures++;
	}
	free(out);
	free(in);
	return NULL;
}

static void run_checks(struct context *context)
{
	static const size_t ring_lengths[] = {
		0, 1, 64, 4000, 4096, 4097, 65535, 65536, 300000, 1u << 20, RING_MAX_BYTES,
	};

	check_broadcast(context, 0, 8);
	check_broadcast(context, context->size - 1, 1u << 20);
	check_allreduce_int(context, 1);
	check_allreduce_int(context, COLLECTIVE_COUNT);
	check_allreduce_double_max(context, COLLECTIVE_COUNT);
	check_allgather(context, 16);
	check_allgather(context, 256 * 1024);
	for (unsigned int i = 0; i < sizeof(ring_lengths) / sizeof(ring_lengths[0]); i++)
		check_ring(context, ring_lengths[i], i + 1);
	check_any_source(context);
	check_probes(context);
	check_self(context);
}

int main(int argc, char **argv)
{
	bool thread_multiple = argc > 1 && !strcmp(argv[1], "thread-multiple");
	struct context context = { 0 };
	struct side_ring ring = { 0 };
	pthread_t side_thread;
	size_t buffer_size;
	int total_failures = 0;
	int provided = MPI_THREAD_SINGLE;

	if (thread_multiple)
		MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	else
		MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &context.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &context.size);
	if (thread_multiple) {
		check(&context, provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided");
		if (provided != MPI_THREAD_MULTIPLE)
			thread_multiple = false;
	}
	/* The all-gather needs size blocks; the ring one byte past its largest message. */
	buffer_size = RING_MAX_BYTES + 1;
	if (buffer_size < (size_t) context.size * 256 * 1024)
		buffer_size = (size_t) context.size * 256 * 1024;
	context.send_buffer = malloc(buffer_size);
	context.receive_buffer = malloc(buffer_size);
	if (!context.send_buffer || !context.receive_buffer) {
		fprintf(stderr, "mpi_consumer: rank %d: out of memory\n", context.rank);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (thread_multiple) {
		MPI_Comm_dup(MPI_COMM_WORLD, &ring.comm);
		ring.rank = context.rank;
		ring.size = context.size;
		if (pthread_create(&side_thread, NULL, side_ring_run, &ring)) {
			fprintf(stderr, "mpi_consumer: rank %d: no second thread\n", context.rank);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	run_checks(&context);
	if (thread_multiple) {
		pthread_join(side_thread, NULL);
		check(&context, ring.failures == 0, "a second thread's ring at the same time");
		MPI_Comm_free(&ring.comm);
	}
	MPI_Allreduce(&context.failures, &total_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (context.rank == 0)
		printf("mpi_consumer: %d ranks: %s\n", context.size,
		       total_failures ? "FAILED" : "every check passed");
	free(context.send_buffer);
	free(context.receive_buffer);
	MPI_Finalize();
	return total_failures ? 1 : 0;
}
