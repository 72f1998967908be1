/*
 * mpi_collective_bench.c: Open MPI's MPI_Allreduce, MPI_Allgather,
 * MPI_Reduce_scatter_block and MPI_Bcast (float, sum), with the rows of
 * bolt_collective_bench (the same size, count, busbw and #wrong, size being
 * the largest buffer as nccl-tests reads it), so that
 * bolt_collective_compare.sh can put Open MPI's figures, over shared memory
 * or over bolt's point-to-point (ofi MTL), next to bolt's from the same run:
 *   mpirun -n 4 util/mpi_collective_bench [-b min] [-e max] [-f factor]
 *          [-c allreduce,allgather,reduce_scatter,broadcast] [--csv]
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "bench_buffer.h"

#define MPI_BENCH_BYTES_PER_SIZE (512ull << 20)
#define MPI_BENCH_MIN_ITERATIONS 5
/* As bolt_collective_bench's: small sizes as many times, so both see the same noise. */
#define MPI_BENCH_MAX_ITERATIONS 20000

enum mpi_bench_kind { MPI_BENCH_ALLREDUCE, MPI_BENCH_ALLGATHER, MPI_BENCH_REDUCE_SCATTER,
		      MPI_BENCH_BROADCAST };

struct mpi_bench_collective {
	const char *name;
	enum mpi_bench_kind kind;
	bool per_member;        /* count is per member: the size holds one share per member */
	double (*bus_factor)(int ranks);
};

static double mpi_bench_factor_allreduce(int ranks) { return 2.0 * (ranks - 1) / ranks; }
static double mpi_bench_factor_gather(int ranks) { return (double) (ranks - 1) / ranks; }
static double mpi_bench_factor_one(int ranks) { return 1.0; }

static const struct mpi_bench_collective mpi_bench_collectives[] = {
	{ "allreduce", MPI_BENCH_ALLREDUCE, false, mpi_bench_factor_allreduce },
	{ "allgather", MPI_BENCH_ALLGATHER, true, mpi_bench_factor_gather },
	{ "reduce_scatter", MPI_BENCH_REDUCE_SCATTER, true, mpi_bench_factor_gather },
	{ "broadcast", MPI_BENCH_BROADCAST, false, mpi_bench_factor_one },
};
#define MPI_BENCH_COLLECTIVES (sizeof(mpi_bench_collectives) / sizeof(mpi_bench_collectives[0]))

static size_t mpi_bench_size(const char *text)
{
	char *end;
	unsigned long long value = strtoull(text, &end, 10);

	if (*end == 'K' || *end == 'k')
		value <<= 10;
	else if (*end == 'M' || *end == 'm')
		value <<= 20;
	return (size_t) value;
}

/* Small integers, exact in float, so that sums need no tolerance. */
static float mpi_bench_value(int rank, size_t index)
{
	return (float) ((index * 7 + (size_t) rank * 3) % 13) - 6;
}

static float mpi_bench_sum(int ranks, size_t index)
{
	float sum = 0;

	for (int other = 0; other < ranks; other++)
		sum += mpi_bench_value(other, index);
	return sum;
}

static void mpi_bench_run(const struct mpi_bench_collective *collective, float *input,
			  float *result, size_t count)
{
	switch (collective->kind) {
	case MPI_BENCH_ALLREDUCE:
		MPI_Allreduce(input, result, (int) count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		break;
	case MPI_BENCH_ALLGATHER:
		MPI_Allgather(input, (int) count, MPI_FLOAT, result, (int) count, MPI_FLOAT,
			      MPI_COMM_WORLD);
		break;
	case MPI_BENCH_REDUCE_SCATTER:
		MPI_Reduce_scatter_block(input, result, (int) count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		break;
	case MPI_BENCH_BROADCAST:
		MPI_Bcast(input, (int) count, MPI_FLOAT, 0, MPI_COMM_WORLD);
		break;
	}
}

/* What element index of this rank's result must be. */
static float mpi_bench_expected(const struct mpi_bench_collective *collective, int rank, int ranks,
				size_t count, size_t index)
{
	switch (collective->kind) {
	case MPI_BENCH_ALLREDUCE:
		return mpi_bench_sum(ranks, index);
	case MPI_BENCH_ALLGATHER:
		return mpi_bench_value((int) (index / count), index % count);
	case MPI_BENCH_REDUCE_SCATTER:
		return mpi_bench_sum(ranks, (size_t) rank * count + index);
	default:
		return mpi_bench_value(0, index);
	}
}

/* One checked run, then timed ones; returns the elements that came out wrong on every rank. */
static long mpi_bench_one(const struct mpi_bench_collective *collective, size_t count,
			  int iterations, int rank, int ranks, double *seconds)
{
	size_t input_length = collective->kind == MPI_BENCH_REDUCE_SCATTER ? count * ranks : count;
	size_t result_length = collective->kind == MPI_BENCH_ALLGATHER ? count * ranks : count;
	float *input = bench_buffer_allocate((input_length + 1) * sizeof(float));
	float *result = bench_buffer_allocate((result_length + 1) * sizeof(float));
	float *checked = collective->kind == MPI_BENCH_BROADCAST ? input : result;
	long wrong = 0, total = 0;
	double start;

	if (!input || !result)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (size_t i = 0; i < input_length; i++)
		input[i] = collective->kind == MPI_BENCH_BROADCAST && rank ? 0 : mpi_bench_value(rank, i);
	mpi_bench_run(collective, input, result, count);
	for (size_t i = 0; i < result_length; i++)
		wrong += checked[i] != mpi_bench_expected(collective, rank, ranks, count, i);
	for (int i = 0; i < iterations / 10; i++)
		mpi_bench_run(collective, input, result, count);
	MPI_Barrier(MPI_COMM_WORLD);
	start = MPI_Wtime();
	for (int i = 0; i < iterations; i++)
		mpi_bench_run(collective, input, result, count);
	*seconds = (MPI_Wtime() - start) / iterations;
	MPI_Reduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	free(input);
	free(result);
	return total;
}

static void mpi_bench_sizes(const struct mpi_bench_collective *collective, size_t min_size,
			    size_t max_size, size_t factor, int rank, int ranks, int csv)
{
	const char *redop = collective->kind == MPI_BENCH_ALLREDUCE ||
			    collective->kind == MPI_BENCH_REDUCE_SCATTER ? "sum" : "none";

	for (size_t size = min_size ? min_size : 4; size <= max_size; size *= factor) {
		size_t count = size / sizeof(float) / (collective->per_member ? (size_t) ranks : 1);
		unsigned long long iterations = MPI_BENCH_BYTES_PER_SIZE / size;
		size_t bytes = count * sizeof(float) * (collective->per_member ? (size_t) ranks : 1);
		double seconds, algbw, busbw;
		long wrong;

		if (!count)
			continue;
		if (iterations < MPI_BENCH_MIN_ITERATIONS)
			iterations = MPI_BENCH_MIN_ITERATIONS;
		if (iterations > MPI_BENCH_MAX_ITERATIONS)
			iterations = MPI_BENCH_MAX_ITERATIONS;
		wrong = mpi_bench_one(collective, count, (int) iterations, rank, ranks, &seconds);
		algbw = bytes / seconds / 1e9;
		busbw = algbw * collective->bus_factor(ranks);
		if (rank == 0 && csv)
			printf("%s,%d,%zu,%zu,float,%s,%.3f,%.4f,%.4f,%ld\n", collective->name, ranks,
			       bytes, count, redop, seconds * 1e6, algbw, busbw, wrong);
		else if (rank == 0)
			printf("  %-14s %12zu %12zu %8s %6s %12.2f %10.3f %10.3f %8ld\n", collective->name,
			       bytes, count, "float", redop, seconds * 1e6, algbw, busbw, wrong);
		fflush(stdout);
	}
}

/* The collectives named in list (comma-separated); 0 if one is unknown. */
static size_t mpi_bench_parse(char *list, const struct mpi_bench_collective **chosen)
{
	size_t count = 0;

	for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
		size_t i = 0;

		while (i < MPI_BENCH_COLLECTIVES && strcmp(name, mpi_bench_collectives[i].name))
			i++;
		if (i == MPI_BENCH_COLLECTIVES || count == MPI_BENCH_COLLECTIVES)
			return 0;
		chosen[count++] = &mpi_bench_collectives[i];
	}
	return count;
}

int main(int argc, char **argv)
{
	const struct mpi_bench_collective *chosen[MPI_BENCH_COLLECTIVES] = { &mpi_bench_collectives[0] };
	size_t min_size = 8, max_size = 64 << 20, count = 1;
	int factor = 2, rank, ranks, option;
	int csv = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	while ((option = getopt(argc, argv, "b:e:f:c:C")) != -1) {
		if (option == 'b')
			min_size = mpi_bench_size(optarg);
		else if (option == 'e')
			max_size = mpi_bench_size(optarg);
		else if (option == 'f')
			factor = atoi(optarg);
		else if (option == 'c')
			count = mpi_bench_parse(optarg, chosen);
		else if (option == 'C')
			csv = 1;
	}
	if (!count) {
		if (rank == 0)
			fprintf(stderr, "mpi_collective_bench: -c takes allreduce, allgather, "
				"reduce_scatter and broadcast\n");
		MPI_Finalize();
		return 2;
	}
	if (rank == 0 && !csv)
		printf("# mpi_collective_bench: %d ranks\n# buffers: %s\n"
		       "# %-14s %12s %12s %8s %6s %12s %10s %10s %8s\n", ranks, bench_buffer_pages(),
		       "collective", "size",
		       "count", "type", "redop", "time(us)", "algbw", "busbw", "#wrong");
	for (size_t i = 0; i < count; i++)
		mpi_bench_sizes(chosen[i], min_size, max_size, (size_t) (factor > 1 ? factor : 2), rank,
				ranks, csv);
	MPI_Finalize();
	return 0;
}
