/*
 * mpi_collective_bench.c: MPI_Allreduce (float, sum) through Open MPI, with
 * the columns of bolt_collective_bench, so that bolt_collective_compare.sh
 * can put Open MPI's shared-memory figures next to bolt's from the same run:
 *   mpirun -n 4 util/mpi_collective_bench [-b min] [-e max] [-f factor] [--csv]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define MPI_BENCH_BYTES_PER_SIZE (512ull << 20)

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

/* One checked run, then timed ones; returns the elements that came out wrong. */
static long mpi_bench_one(size_t count, int iterations, int rank, int ranks, double *seconds)
{
	float *input = malloc((count ? count : 1) * sizeof(float));
	float *result = malloc((count ? count : 1) * sizeof(float));
	long wrong = 0, total = 0;
	double start;

	if (!input || !result)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (size_t i = 0; i < count; i++)
		input[i] = (float) ((i * 7 + (size_t) rank * 3) % 13) - 6;
	MPI_Allreduce(input, result, (int) count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	for (size_t i = 0; i < count; i++) {
		float expected = 0;

		for (int other = 0; other < ranks; other++)
			expected += (float) ((i * 7 + (size_t) other * 3) % 13) - 6;
		wrong += result[i] != expected;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	start = MPI_Wtime();
	for (int i = 0; i < iterations; i++)
		MPI_Allreduce(input, result, (int) count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	*seconds = (MPI_Wtime() - start) / iterations;
	MPI_Reduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	free(input);
	free(result);
	return total;
}

int main(int argc, char **argv)
{
	size_t min_size = 8, max_size = 64 << 20;
	int factor = 2, rank, ranks, option;
	int csv = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	while ((option = getopt(argc, argv, "b:e:f:c")) != -1) {
		if (option == 'b')
			min_size = mpi_bench_size(optarg);
		else if (option == 'e')
			max_size = mpi_bench_size(optarg);
		else if (option == 'f')
			factor = atoi(optarg);
		else if (option == 'c')
			csv = 1;
	}
	if (rank == 0 && !csv)
		printf("# mpi_collective_bench: MPI_Allreduce, %d ranks\n"
		       "# %-14s %12s %12s %8s %6s %12s %10s %10s %8s\n", ranks, "collective", "size",
		       "count", "type", "redop", "time(us)", "algbw", "busbw", "#wrong");
	for (size_t size = min_size ? min_size : 4; size <= max_size; size *= (size_t) (factor > 1 ? factor : 2)) {
		size_t count = size / sizeof(float);
		unsigned long long iterations = MPI_BENCH_BYTES_PER_SIZE / size;
		double seconds, algbw;
		long wrong;

		iterations = iterations < 5 ? 5 : iterations > 1000 ? 1000 : iterations;
		wrong = mpi_bench_one(count, (int) iterations, rank, ranks, &seconds);
		algbw = count * sizeof(float) / seconds / 1e9;
		if (rank == 0 && csv)
			printf("mpi_allreduce,%d,%zu,%zu,float,sum,%.3f,%.4f,%.4f,%ld\n", ranks,
			       count * sizeof(float), count, seconds * 1e6, algbw,
			       algbw * 2.0 * (ranks - 1) / ranks, wrong);
		else if (rank == 0)
			printf("  %-14s %12zu %12zu %8s %6s %12.2f %10.3f %10.3f %8ld\n", "mpi_allreduce",
			       count * sizeof(float), count, "float", "sum", seconds * 1e6, algbw,
			       algbw * 2.0 * (ranks - 1) / ranks, wrong);
		fflush(stdout);
	}
	MPI_Finalize();
	return 0;
}
