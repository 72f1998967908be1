/*
 * bolt_collective_bench.c: collective bandwidth and latency through
 * libfabric's collective API, in the style of nccl-tests: for each size one
 * row of size, count, type, op, time, algbw, busbw and #wrong (every size is
 * checked against the values every rank can compute). It starts N local
 * ranks itself (fork) on the software device unless FI_BOLT_SOFT says
 * otherwise; they find each other through a shared memory page. bolt is
 * found through FI_PROVIDER_PATH like any provider: only the public
 * libfabric API is used.
 *
 * Built with BOLT_BENCH_MPI (util/bolt_collective_bench_mpi), it runs under
 * mpirun instead, one rank per MPI process, on as many hosts as mpirun
 * starts: MPI only carries the endpoint names, barriers and the #wrong sums,
 * as nccl-tests uses it; the collectives are bolt's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_bolt.h>

#include "bench_buffer.h"
#include "bolt_fixture.h"

#ifdef BOLT_BENCH_MPI
#include <mpi.h>
#endif

#define BENCH_MAX_RANKS 64
#define BENCH_NAME_SIZE 64
#define BENCH_TIMEOUT_MS 120000
#define BENCH_MAX_SIZES 64
/*
 * Timed iterations move about this many bytes per size, within the bounds
 * below. Small sizes run 20000: two ranks spinning on a 2-core machine lose
 * a few milliseconds in each timed run to whatever else the machine runs
 * (single operations of 20 to 160 us among 1.5 us ones), which made 1000
 * 8-byte all-reduces average 4.5 us where 20000 average 1.7 us.
 */
#define BENCH_BYTES_PER_SIZE (512ull << 20)
#define BENCH_MIN_ITERATIONS 5
#define BENCH_MAX_ITERATIONS 20000

enum bench_format { BENCH_TEXT, BENCH_CSV, BENCH_JSON };

struct bench_collective {
	const char *name;
	enum fi_collective_op kind;
	bool reduces;
	/* busbw = algbw x factor(n), as nccl-tests defines it. */
	double (*bus_factor)(int ranks);
};

struct bench_options {
	int ranks;
	size_t min_size, max_size;
	unsigned int factor;
	const struct bench_collective *collectives[8];
	int collective_count;
	enum fi_datatype datatype;
	enum fi_op op;
	enum bench_format format;
	const char *plot;
	int iterations;                 /* 0: by size */
};

/* One row, as rank 0 prints it; kept for the plot. */
struct bench_row {
	const char *collective;
	size_t size, count;
	double time_us, algbw, busbw;
	uint64_t wrong;
	char algorithm[64];     /* as bolt ran the last operation: "direct", "ring:256K:4", ... */
};

/* The page the ranks share. */
struct bench_shared {
	struct bolt_fixture_barrier barrier;    /* its failed: a rank failed, nobody waits */
	char names[BENCH_MAX_RANKS][BENCH_NAME_SIZE];
	uint64_t wrong[BENCH_MAX_RANKS];
	struct bench_row rows[8 * BENCH_MAX_SIZES];
	int row_count;
};

struct bench_rank {
	int rank, ranks;
	struct bench_shared *shared;
	struct bolt_fixture_endpoint endpoint;  /* with its EQ and the group of all ranks */
};

static double bench_factor_allreduce(int ranks) { return 2.0 * (ranks - 1) / ranks; }
static double bench_factor_gather(int ranks) { return (double) (ranks - 1) / ranks; }
static double bench_factor_one(int ranks) { return 1.0; }
static double bench_factor_none(int ranks) { return 0.0; }

static const struct bench_collective bench_collectives[] = {
	{ "allreduce", FI_ALLREDUCE, true, bench_factor_allreduce },
	{ "allgather", FI_ALLGATHER, false, bench_factor_gather },
	{ "reduce_scatter", FI_REDUCE_SCATTER, true, bench_factor_gather },
	{ "alltoall", FI_ALLTOALL, false, bench_factor_gather },
	{ "broadcast", FI_BROADCAST, false, bench_factor_one },
	{ "barrier", FI_BARRIER, false, bench_factor_none },
};

static const struct { const char *name; enum fi_datatype datatype; size_t size; } bench_datatypes[] = {
	{ "int8", FI_INT8, 1 }, { "uint8", FI_UINT8, 1 }, { "int32", FI_INT32, 4 },
	{ "uint32", FI_UINT32, 4 }, { "int64", FI_INT64, 8 }, { "uint64", FI_UINT64, 8 },
	{ "float", FI_FLOAT, 4 }, { "double", FI_DOUBLE, 8 },
	{ "float16", FI_BOLT_FLOAT16, 2 }, { "bfloat16", FI_BOLT_BFLOAT16, 2 },
};

static const struct { const char *name; enum fi_op op; } bench_ops[] = {
	{ "sum", FI_SUM }, { "prod", FI_PROD }, { "min", FI_MIN }, { "max", FI_MAX },
};

static double bench_now(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double) now.tv_sec + now.tv_nsec / 1e9;
}

static int bench_fail(const struct bench_rank *rank, const char *what, int ret)
{
	fprintf(stderr, "bolt_collective_bench: rank %d: %s: %s (%d)\n", rank ? rank->rank : -1,
		what ? what : "?", fi_strerror(ret < 0 ? -ret : ret), ret);
	return ret ? ret : -FI_EOTHER;
}

/* ---- Meeting the other ranks ---- */

/*
 * Whether a rank whose collective failed still meets the others: forked
 * ranks do (their barrier lets everyone go once one has failed); MPI ranks do
 * not, as a barrier or a sum would go over the connection that failed, to a
 * peer that may be gone, and Open MPI's ofi MTL crashes or waits forever on it.
 */
#ifdef BOLT_BENCH_MPI
#define BENCH_MEETS_AFTER_FAILURE false
#else
#define BENCH_MEETS_AFTER_FAILURE true
#endif

static void bench_barrier(struct bench_rank *rank)
{
#ifdef BOLT_BENCH_MPI
	MPI_Request request;
	int done = 0;

	MPI_Ibarrier(MPI_COMM_WORLD, &request);
	/* Drives this rank's endpoint while it waits: a peer may need it to finish. */
	while (!done && MPI_Test(&request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
		struct fi_cq_tagged_entry entry;

		if (rank->endpoint.cq)
			fi_cq_read(rank->endpoint.cq, &entry, 0);
		sched_yield();
	}
#else
	bolt_fixture_barrier_wait(&rank->shared->barrier, rank->ranks, &rank->endpoint);
#endif
}

/* Every rank's name in shared->names, in rank order. */
static void bench_share_names(struct bench_rank *rank)
{
#ifdef BOLT_BENCH_MPI
	MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rank->shared->names, BENCH_NAME_SIZE,
		      MPI_CHAR, MPI_COMM_WORLD);
#else
	bench_barrier(rank);
#endif
}

/* The sum over the ranks of each one's wrong elements. */
static uint64_t bench_sum_wrong(struct bench_rank *rank, uint64_t wrong)
{
	uint64_t total = 0;

#ifdef BOLT_BENCH_MPI
	MPI_Allreduce(&wrong, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
#else
	rank->shared->wrong[rank->rank] = wrong;
	bench_barrier(rank);
	for (int other = 0; other < rank->ranks; other++)
		total += rank->shared->wrong[other];
	bench_barrier(rank);
#endif
	return total;
}

/*
 * Waits for the operation's completion by polling, as MPI's progress loops
 * do, without giving the CPU away: where ranks outnumber cores, bolt itself
 * yields when its collective has nothing to do (FI_BOLT_COLLECTIVE_YIELD),
 * as Open MPI's progress does when oversubscribed; a yield of the benchmark's
 * own would hand a loaded machine's other jobs the core at every poll.
 */
static int bench_wait(struct bench_rank *rank, void *context)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	struct timespec start;
	ssize_t ret;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (unsigned long polls = 1;; polls++) {
		ret = fi_cq_read(rank->endpoint.cq, &entry, 1);
		if (ret == 1)
			return entry.op_context == context ? 0 : -FI_EOTHER;
		if (ret == -FI_EAVAIL) {
			memset(&error, 0, sizeof(error));
			fi_cq_readerr(rank->endpoint.cq, &error, 0);
			return -error.err;
		}
		if (ret != -FI_EAGAIN)
			return (int) ret;
		if (polls % 4096 == 0 && (atomic_load(&rank->shared->barrier.failed) ||
					  bolt_fixture_elapsed_ms(&start) > BENCH_TIMEOUT_MS))
			return -FI_ETIMEDOUT;
	}
}


static int bench_open(struct bench_rank *rank)
{
	struct bolt_fixture_options options = {
		.cq_size = 1024, .av_type = FI_AV_TABLE, .event_queue = true,
	};
	struct fi_info *hints = bolt_fixture_hints(FI_MSG | FI_TAGGED | FI_COLLECTIVE,
						   FI_BOLT_PROVIDER_NAME);
	struct bolt_fixture_endpoint *endpoint = &rank->endpoint;
	size_t length = BENCH_NAME_SIZE;
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	ret = bolt_fixture_open(endpoint, hints, &options);
	fi_freeinfo(hints);
	if (ret && !endpoint->info)
		return bench_fail(rank, "fi_getinfo (is FI_PROVIDER_PATH set?)", ret);
	if (ret)
		return bench_fail(rank, endpoint->failed_call, ret);
	ret = fi_getname(&endpoint->ep->fid, rank->shared->names[rank->rank], &length);
	if (ret)
		return bench_fail(rank, "fi_getname", ret);
	bench_share_names(rank);
	ret = bolt_fixture_insert_names(endpoint, rank->shared->names, BENCH_NAME_SIZE, rank->ranks,
					NULL);
	if (!ret)
		ret = bolt_fixture_join_all(endpoint, rank->ranks, BENCH_TIMEOUT_MS);
	return ret ? bench_fail(rank, endpoint->failed_call, ret) : 0;
}

/* ---- Data and its check ---- */

/* Small integers, exact in every datatype, so that sums and products need no tolerance. */
static int bench_value(int rank, size_t index, enum fi_op op)
{
	if (op == FI_PROD)
		return (index + (size_t) rank) % 7 == 0 ? 2 : 1;
	return (int) ((index * 7 + (size_t) rank * 3) % 13) - 6;
}

static uint16_t bench_half_of_small(int value, bool bfloat)
{
	/* Exact conversion of a small integer (|value| <= 255). */
	uint16_t sign = value < 0 ? 0x8000 : 0;
	unsigned int magnitude = (unsigned int) (value < 0 ? -value : value);
	int exponent = 0;

	if (!magnitude)
		return sign;
	while ((magnitude >> exponent) > 1)
		exponent++;
	if (bfloat)
		return sign | (uint16_t) ((exponent + 127) << 7) |
		       (uint16_t) (((magnitude << (7 - exponent)) & 0x7f));
	return sign | (uint16_t) ((exponent + 15) << 10) | (uint16_t) ((magnitude << (10 - exponent)) & 0x3ff);
}

static void bench_store(void *buffer, size_t index, enum fi_datatype datatype, int value)
{
	switch ((int) datatype) {
	case FI_INT8: case FI_UINT8: ((int8_t *) buffer)[index] = (int8_t) value; break;
	case FI_INT32: case FI_UINT32: ((int32_t *) buffer)[index] = value; break;
	case FI_INT64: case FI_UINT64: ((int64_t *) buffer)[index] = value; break;
	case FI_FLOAT: ((float *) buffer)[index] = (float) value; break;
	case FI_DOUBLE: ((double *) buffer)[index] = value; break;
	case FI_BOLT_FLOAT16: ((uint16_t *) buffer)[index] = bench_half_of_small(value, false); break;
	case FI_BOLT_BFLOAT16: ((uint16_t *) buffer)[index] = bench_half_of_small(value, true); break;
	}
}

static bool bench_equal(const void *buffer, size_t index, enum fi_datatype datatype, int value)
{
	char expected[8];

	bench_store(expected, 0, datatype, value);
	switch ((int) datatype) {
	case FI_INT8: case FI_UINT8: return ((const uint8_t *) buffer)[index] == *(uint8_t *) expected;
	case FI_INT32: case FI_UINT32: case FI_FLOAT:
		return !memcmp((const char *) buffer + index * 4, expected, 4);
	case FI_INT64: case FI_UINT64: case FI_DOUBLE:
		return !memcmp((const char *) buffer + index * 8, expected, 8);
	default:
		return !memcmp((const char *) buffer + index * 2, expected, 2);
	}
}

static int bench_combine(int left, int right, enum fi_op op)
{
	switch (op) {
	case FI_PROD: return left * right;
	case FI_MIN: return left < right ? left : right;
	case FI_MAX: return left > right ? left : right;
	default: return left + right;
	}
}

/* The reduction of element index over every rank, of the input of rank `block`'s block. */
static int bench_reduced(const struct bench_rank *rank, size_t index, enum fi_op op)
{
	int value = bench_value(0, index, op);

	for (int other = 1; other < rank->ranks; other++)
		value = bench_combine(value, bench_value(other, index, op), op);
	return value;
}

/* The value element index of the result must have, and its position in rank's input. */
static int bench_expected(const struct bench_rank *rank, const struct bench_collective *collective,
			  const struct bench_options *options, size_t count, size_t index)
{
	size_t block = index / count, offset = index % count;

	switch (collective->kind) {
	case FI_ALLREDUCE:
		return bench_reduced(rank, index, options->op);
	case FI_REDUCE_SCATTER:
		return bench_reduced(rank, (size_t) rank->rank * count + index, options->op);
	case FI_ALLGATHER:
		return bench_value((int) block, offset, options->op);
	case FI_ALLTOALL:
		return bench_value((int) block, (size_t) rank->rank * count + offset, options->op);
	default:
		return bench_value(0, index, options->op);
	}
}

static size_t bench_datatype_size(enum fi_datatype datatype)
{
	for (size_t i = 0; i < sizeof(bench_datatypes) / sizeof(bench_datatypes[0]); i++)
		if (bench_datatypes[i].datatype == datatype)
			return bench_datatypes[i].size;
	return 0;
}

/* Elements of the input and of the result, for count. */
static void bench_lengths(const struct bench_collective *collective, int ranks, size_t count,
			  size_t *input, size_t *result)
{
	*input = collective->kind == FI_REDUCE_SCATTER || collective->kind == FI_ALLTOALL ?
		 count * (size_t) ranks : count;
	*result = collective->kind == FI_ALLGATHER || collective->kind == FI_ALLTOALL ?
		  count * (size_t) ranks : count;
}

/* A barrier moves nothing: it has one row, of size 0, whatever the sizes asked. */
static bool bench_moves_data(const struct bench_collective *collective)
{
	return collective->kind != FI_BARRIER;
}

/* count from size as nccl-tests reads size: the largest buffer of the operation. */
static size_t bench_count(const struct bench_collective *collective, int ranks, size_t size,
			  size_t element_size)
{
	size_t count = size / element_size;

	if (collective->kind == FI_ALLGATHER || collective->kind == FI_REDUCE_SCATTER ||
	    collective->kind == FI_ALLTOALL)
		count /= (size_t) ranks;
	return count;
}

static ssize_t bench_post(struct bench_rank *rank, const struct bench_collective *collective,
			  const struct bench_options *options, void *input, void *result, size_t count,
			  void *context)
{
	struct fid_ep *ep = rank->endpoint.ep;
	fi_addr_t group = rank->endpoint.coll_addr;

	switch (collective->kind) {
	case FI_ALLREDUCE:
		return fi_allreduce(ep, input, count, NULL, result, NULL, group, options->datatype,
				    options->op, 0, context);
	case FI_REDUCE_SCATTER:
		return fi_reduce_scatter(ep, input, count, NULL, result, NULL, group,
					 options->datatype, options->op, 0, context);
	case FI_ALLGATHER:
		return fi_allgather(ep, input, count, NULL, result, NULL, group, options->datatype, 0,
				    context);
	case FI_ALLTOALL:
		return fi_alltoall(ep, input, count, NULL, result, NULL, group, options->datatype, 0,
				   context);
	case FI_BARRIER:
		return fi_barrier(ep, group, context);
	default:
		/* The root broadcasts its input; the others receive into their result. */
		return fi_broadcast(ep, rank->rank == 0 ? input : result, count, NULL, group, 0,
				    options->datatype, 0, context);
	}
}

static int bench_run_once(struct bench_rank *rank, const struct bench_collective *collective,
			  const struct bench_options *options, void *input, void *result, size_t count)
{
	int context;
	ssize_t ret;

	do {
		ret = bench_post(rank, collective, options, input, result, count, &context);
	} while (ret == -FI_EAGAIN);
	return ret ? (int) ret : bench_wait(rank, &context);
}

static uint64_t bench_check(const struct bench_rank *rank, const struct bench_collective *collective,
			    const struct bench_options *options, const void *result, size_t count,
			    size_t result_length)
{
	uint64_t wrong = 0;

	if (collective->kind == FI_BROADCAST && rank->rank == 0)
		return 0;
	for (size_t index = 0; index < result_length; index++)
		if (!bench_equal(result, index, options->datatype,
				 bench_expected(rank, collective, options, count, index)))
			wrong++;
	return wrong;
}

static int bench_iterations(const struct bench_options *options, size_t size)
{
	uint64_t iterations = BENCH_BYTES_PER_SIZE / (size ? size : 1);

	if (options->iterations)
		return options->iterations;
	if (iterations < BENCH_MIN_ITERATIONS)
		return BENCH_MIN_ITERATIONS;
	return iterations > BENCH_MAX_ITERATIONS ? BENCH_MAX_ITERATIONS : (int) iterations;
}

/* How bolt ran the group's last operation (fi_ext_bolt.h), or "-" where it does not say. */
static void bench_algorithm(struct bench_rank *rank, char *text, size_t size)
{
	struct fi_bolt_collective_choice choice = { 0 };
	char segment[24];

	snprintf(text, size, "-");
	if (fi_control(&rank->endpoint.mc->fid, FI_BOLT_COLLECTIVE_GET_CHOICE, &choice) ||
	    !choice.algorithm)
		return;
	if (!choice.segment_size) {
		snprintf(text, size, "%s%s", choice.algorithm,
			 choice.pull == 2 ? "+pull-one" : choice.pull ? "+pull" : "");
		return;
	}
	if (choice.segment_size % (1 << 20) == 0)
		snprintf(segment, sizeof(segment), "%zuM", choice.segment_size >> 20);
	else if (choice.segment_size % (1 << 10) == 0)
		snprintf(segment, sizeof(segment), "%zuK", choice.segment_size >> 10);
	else
		snprintf(segment, sizeof(segment), "%zu", choice.segment_size);
	/* The ring has lanes; the chain none. */
	if (choice.lanes)
		snprintf(text, size, "%s:%s:%d", choice.algorithm, segment, choice.lanes);
	else
		snprintf(text, size, "%s:%s", choice.algorithm, segment);
}

/* One size: a checked run, then timed runs between barriers. */
static int bench_size(struct bench_rank *rank, const struct bench_collective *collective,
		      const struct bench_options *options, size_t size, struct bench_row *row)
{
	size_t element_size = bench_datatype_size(options->datatype);
	size_t count = bench_count(collective, rank->ranks, size, element_size);
	size_t input_length, result_length;
	int iterations = bench_iterations(options, size);
	char *input, *result;
	double start;
	int ret;

	bench_lengths(collective, rank->ranks, count, &input_length, &result_length);
	input = bench_buffer_allocate((input_length + 1) * element_size);
	result = bench_buffer_allocate((result_length + 1) * element_size);
	if (!input || !result) {
		free(input);
		free(result);
		return bench_fail(rank, "buffers", -FI_ENOMEM);
	}
	for (size_t index = 0; index < input_length; index++)
		bench_store(input, index, options->datatype, bench_value(rank->rank, index, options->op));
	if (collective->kind == FI_BROADCAST && rank->rank == 0)
		memcpy(result, input, input_length * element_size);
	ret = bench_run_once(rank, collective, options, input, result, count);
	if (!ret)
		row->wrong = bench_check(rank, collective, options, result, count, result_length);
	/* A tenth as warm-up, as nccl-tests does, then the timed ones. */
	for (int iteration = 0; !ret && iteration < iterations / 10; iteration++)
		ret = bench_run_once(rank, collective, options, input, result, count);
	if (!ret || BENCH_MEETS_AFTER_FAILURE)
		bench_barrier(rank);
	start = bench_now();
	for (int iteration = 0; !ret && iteration < iterations; iteration++)
		ret = bench_run_once(rank, collective, options, input, result, count);
	row->time_us = (bench_now() - start) / iterations * 1e6;
	bench_algorithm(rank, row->algorithm, sizeof(row->algorithm));
	free(input);
	free(result);
	if (ret)
		return bench_fail(rank, collective->name, ret);
	row->collective = collective->name;
	row->count = count;
	row->size = count * element_size * (input_length > count || result_length > count ?
					     (size_t) rank->ranks : 1);
	row->algbw = row->time_us > 0 ? row->size / row->time_us / 1e3 : 0;
	row->busbw = row->algbw * collective->bus_factor(rank->ranks);
	return 0;
}

/* ---- Output ---- */

static const char *bench_datatype_name(enum fi_datatype datatype)
{
	for (size_t i = 0; i < sizeof(bench_datatypes) / sizeof(bench_datatypes[0]); i++)
		if (bench_datatypes[i].datatype == datatype)
			return bench_datatypes[i].name;
	return "?";
}

static const char *bench_op_name(const struct bench_collective *collective, enum fi_op op)
{
	if (!collective->reduces)
		return "none";
	for (size_t i = 0; i < sizeof(bench_ops) / sizeof(bench_ops[0]); i++)
		if (bench_ops[i].op == op)
			return bench_ops[i].name;
	return "?";
}

/* The first three fields of /proc/loadavg: figures are disturbed by other jobs. */
static const char *bench_load_average(char *text, size_t size)
{
	FILE *file = fopen("/proc/loadavg", "r");
	float one, five, fifteen;

	snprintf(text, size, "unknown");
	if (file && fscanf(file, "%f %f %f", &one, &five, &fifteen) == 3)
		snprintf(text, size, "%.2f %.2f %.2f", one, five, fifteen);
	if (file)
		fclose(file);
	return text;
}

static void bench_print_header(const struct bench_options *options, int ranks)
{
	const char *profile = getenv("FI_BOLT_SOFT");
	char load[64];

	if (options->format == BENCH_CSV) {
		printf("collective,ranks,size,count,type,redop,time_us,algbw_GBps,busbw_GBps,wrong,"
		       "algorithm\n");
		return;
	}
	if (options->format == BENCH_JSON) {
		printf("{\"ranks\": %d, \"device\": \"%s\", \"rows\": [\n", ranks,
		       profile && profile[0] ? profile : "system");
		return;
	}
	printf("# bolt_collective_bench: %d ranks, device %s, %ld cores, load average %s\n", ranks,
	       profile && profile[0] ? profile : "system", sysconf(_SC_NPROCESSORS_ONLN),
	       bench_load_average(load, sizeof(load)));
	printf("# buffers: %s\n", bench_buffer_pages());
	printf("# %-14s %12s %12s %8s %6s %12s %10s %10s %8s  %s\n", "collective", "size", "count",
	       "type", "redop", "time(us)", "algbw", "busbw", "#wrong", "algorithm");
	printf("# %-14s %12s %12s %8s %6s %12s %10s %10s %8s  %s\n", "", "(B)", "(elements)", "", "",
	       "", "(GB/s)", "(GB/s)", "", "(segment:lanes)");
}

static void bench_print_row(const struct bench_options *options, const struct bench_row *row,
			    const struct bench_collective *collective, int ranks, bool first)
{
	const char *type = bench_datatype_name(options->datatype);
	const char *op = bench_op_name(collective, options->op);

	if (options->format == BENCH_CSV)
		printf("%s,%d,%zu,%zu,%s,%s,%.3f,%.4f,%.4f,%" PRIu64 ",%s\n", row->collective, ranks,
		       row->size, row->count, type, op, row->time_us, row->algbw, row->busbw, row->wrong,
		       row->algorithm);
	else if (options->format == BENCH_JSON)
		printf("%s  {\"collective\": \"%s\", \"size\": %zu, \"count\": %zu, \"type\": \"%s\", "
		       "\"redop\": \"%s\", \"time_us\": %.3f, \"algbw_GBps\": %.4f, \"busbw_GBps\": %.4f, "
		       "\"wrong\": %" PRIu64 ", \"algorithm\": \"%s\"}", first ? "" : ",\n", row->collective,
		       row->size, row->count, type, op, row->time_us, row->algbw, row->busbw, row->wrong,
		       row->algorithm);
	else
		printf("  %-14s %12zu %12zu %8s %6s %12.2f %10.3f %10.3f %8" PRIu64 "  %s\n",
		       row->collective, row->size, row->count, type, op, row->time_us, row->algbw,
		       row->busbw, row->wrong, row->algorithm);
	fflush(stdout);
}

/* busbw against size, one line per collective, through gnuplot. */
static int bench_plot(const struct bench_options *options, const struct bench_shared *shared, int ranks)
{
	FILE *gnuplot;
	int lines = 0;

	for (int c = 0; c < options->collective_count; c++)
		lines += bench_moves_data(options->collectives[c]);
	if (!lines) {
		fprintf(stderr, "bolt_collective_bench: --plot: a barrier has no bandwidth to draw\n");
		return -1;
	}
	gnuplot = popen("gnuplot", "w");

	if (!gnuplot) {
		fprintf(stderr, "bolt_collective_bench: gnuplot: %s\n", strerror(errno));
		return -1;
	}
	fprintf(gnuplot, "set terminal png size 900,600\nset output '%s'\n", options->plot);
	fprintf(gnuplot, "set title 'bolt collectives, %d ranks, %s'\nset logscale x 2\n", ranks,
		bench_datatype_name(options->datatype));
	fprintf(gnuplot, "set xlabel 'size (bytes)'\nset ylabel 'busbw (GB/s)'\nset key left top\n");
	fprintf(gnuplot, "set format x '%%.0b %%BB'\nset grid\nplot ");
	lines = 0;
	for (int c = 0; c < options->collective_count; c++)
		if (bench_moves_data(options->collectives[c]))
			fprintf(gnuplot, "%s'-' using 1:2 with linespoints title '%s'", lines++ ? ", " : "",
				options->collectives[c]->name);
	fprintf(gnuplot, "\n");
	for (int c = 0; c < options->collective_count; c++) {
		/* A barrier has no bandwidth to draw. */
		if (!bench_moves_data(options->collectives[c]))
			continue;
		for (int i = 0; i < shared->row_count; i++)
			if (!strcmp(shared->rows[i].collective, options->collectives[c]->name))
				fprintf(gnuplot, "%zu %f\n", shared->rows[i].size, shared->rows[i].busbw);
		fprintf(gnuplot, "e\n");
	}
	return pclose(gnuplot) ? -1 : 0;
}

/* ---- The ranks ---- */

static int bench_rank_main(struct bench_rank *rank, const struct bench_options *options)
{
	struct bench_shared *shared = rank->shared;
	bool first = true;
	int ret = bench_open(rank);

	if (!ret && rank->rank == 0)
		bench_print_header(options, rank->ranks);
	for (int c = 0; !ret && c < options->collective_count; c++) {
		const struct bench_collective *collective = options->collectives[c];

		for (size_t size = bench_moves_data(collective) ? options->min_size : 0;
		     !ret && size <= options->max_size; size *= options->factor) {
			struct bench_row row = { 0 };

			if (bench_moves_data(collective) &&
			    !bench_count(collective, rank->ranks, size, bench_datatype_size(options->datatype)))
				continue;
			bench_barrier(rank);
			ret = bench_size(rank, collective, options, size, &row);
			if (!ret || BENCH_MEETS_AFTER_FAILURE)
				row.wrong = bench_sum_wrong(rank, row.wrong);
			if (!ret && rank->rank == 0) {
				bench_print_row(options, &row, collective, rank->ranks, first);
				if (shared->row_count < (int) (sizeof(shared->rows) / sizeof(shared->rows[0])))
					shared->rows[shared->row_count++] = row;
				first = false;
			}
			if (row.wrong)
				ret = -FI_EIO;
			if (options->factor < 2 || !bench_moves_data(collective))
				break;
		}
	}
	if (ret)
		atomic_store(&shared->barrier.failed, 1);
	if (rank->rank == 0 && options->format == BENCH_JSON)
		printf("\n]}\n");
	fflush(stdout);         /* ranks end with _exit, which flushes nothing */
	if (!ret || BENCH_MEETS_AFTER_FAILURE)
		bench_barrier(rank);
	bolt_fixture_close(&rank->endpoint);
	return ret;
}

#ifndef BOLT_BENCH_MPI
/* The software device unless the caller chose; its limits scaled to the ranks (one host each). */
static void bench_environment(int ranks)
{
	char value[32];

	setenv("FI_PROVIDER", FI_BOLT_PROVIDER_NAME, 0);
	setenv("FI_BOLT_SOFT", "thunderbolt", 0);
	snprintf(value, sizeof(value), "bench-%d", (int) getpid());
	setenv("FI_BOLT_SOFT_NAMESPACE", value, 0);
	bolt_fixture_scale_software_limits(ranks, false);
}

static int bench_start(const struct bench_options *options)
{
	struct bench_shared *shared;
	pid_t pids[BENCH_MAX_RANKS];
	char segment[128];
	int failures = 0;

	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return 1;
	memset(shared, 0, sizeof(*shared));
	bench_environment(options->ranks);
	fflush(stdout);
	for (int index = 0; index < options->ranks; index++) {
		pids[index] = fork();
		if (pids[index] == 0) {
			struct bench_rank rank = { .rank = index, .ranks = options->ranks, .shared = shared };
			const char *topology = getenv("FI_BOLT_SOFT_TOPOLOGY");

			/* On a mesh of the software device's hosts, rank r is host r. */
			if (topology && !strncmp(topology, "mesh:", 5))
				bolt_fixture_set_software_host(index);
			_exit(bench_rank_main(&rank, options) ? 1 : 0);
		}
		if (pids[index] < 0) {
			atomic_store(&shared->barrier.failed, 1);
			failures++;
		}
	}
	for (int index = 0; index < options->ranks; index++) {
		if (pids[index] > 0 && bolt_fixture_process_status(pids[index]))
			failures++;
	}
	/* The last rank out removes the software device's segment; this is for ranks that crashed. */
	snprintf(segment, sizeof(segment), "/bolt-softrdma-%u-%s-%s", (unsigned int) getuid(),
		 getenv("FI_BOLT_SOFT"), getenv("FI_BOLT_SOFT_NAMESPACE"));
	shm_unlink(segment);
	if (!failures && options->plot && bench_plot(options, shared, options->ranks))
		failures++;
	munmap(shared, sizeof(*shared));
	return failures ? 1 : 0;
}

#endif

#ifdef BOLT_BENCH_MPI
/* Under mpirun: this process is one rank; the device is whatever FI_BOLT_SOFT and the host say. */
static int bench_start_mpi(const struct bench_options *options, int *argc, char ***argv)
{
	struct bench_shared *shared = calloc(1, sizeof(*shared));
	struct bench_rank rank = { .shared = shared };
	int ret;

	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &rank.ranks);
	setenv("FI_PROVIDER", FI_BOLT_PROVIDER_NAME, 0);
	if (!shared || rank.ranks > BENCH_MAX_RANKS) {
		fprintf(stderr, "bolt_collective_bench: at most %d ranks\n", BENCH_MAX_RANKS);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	ret = bench_rank_main(&rank, options);
	if (!ret && rank.rank == 0 && options->plot)
		ret = bench_plot(options, shared, rank.ranks);
	free(shared);
	/* A failed rank ends the job: MPI_Finalize would wait for the ranks it lost. */
	if (ret)
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Finalize();
	return 0;
}
#endif

/* ---- Options ---- */

static size_t bench_parse_size(const char *text)
{
	char *end;
	unsigned long long value = strtoull(text, &end, 10);

	switch (*end) {
	case 'K': case 'k': value <<= 10; break;
	case 'M': case 'm': value <<= 20; break;
	case 'G': case 'g': value <<= 30; break;
	}
	return (size_t) value;
}

static bool bench_parse_collectives(struct bench_options *options, char *list)
{
	options->collective_count = 0;
	for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
		bool found = false;

		for (size_t i = 0; i < sizeof(bench_collectives) / sizeof(bench_collectives[0]); i++) {
			if (strcmp(name, "all") && strcmp(name, bench_collectives[i].name))
				continue;
			if (options->collective_count < 8)
				options->collectives[options->collective_count++] = &bench_collectives[i];
			found = true;
		}
		if (!found)
			return false;
	}
	return options->collective_count > 0;
}

static bool bench_parse_datatype(struct bench_options *options, const char *name)
{
	for (size_t i = 0; i < sizeof(bench_datatypes) / sizeof(bench_datatypes[0]); i++) {
		if (!strcmp(name, bench_datatypes[i].name)) {
			options->datatype = bench_datatypes[i].datatype;
			return true;
		}
	}
	return false;
}

static bool bench_parse_op(struct bench_options *options, const char *name)
{
	for (size_t i = 0; i < sizeof(bench_ops) / sizeof(bench_ops[0]); i++) {
		if (!strcmp(name, bench_ops[i].name)) {
			options->op = bench_ops[i].op;
			return true;
		}
	}
	return false;
}

static void bench_usage(FILE *out)
{
	fprintf(out,
		"usage: bolt_collective_bench [-n ranks] [-b min_bytes] [-e max_bytes] [-f factor]\n"
		"       [-c allreduce,allgather,reduce_scatter,alltoall,broadcast,barrier|all]\n"
		"       [-d float|double|float16|bfloat16|int8|uint8|int32|uint32|int64|uint64]\n"
		"       [-o sum|prod|min|max] [-i iterations] [--csv|--json] [--plot FILE.png]\n"
		"Starts n local ranks (default 4) on the software device (FI_BOLT_SOFT, default\n"
		"thunderbolt); sizes take K, M and G suffixes (default 8 to 64M, factor 2); a\n"
		"barrier has one row, of size 0.\n");
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "csv", no_argument, NULL, 'C' }, { "json", no_argument, NULL, 'J' },
		{ "plot", required_argument, NULL, 'P' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench_options options = {
		.ranks = 4, .min_size = 8, .max_size = 64 << 20, .factor = 2,
		.datatype = FI_FLOAT, .op = FI_SUM, .format = BENCH_TEXT,
	};
	char default_collectives[] = "allreduce";
	int option;

	bench_parse_collectives(&options, default_collectives);
	while ((option = getopt_long(argc, argv, "n:b:e:f:c:d:o:i:h", long_options, NULL)) != -1) {
		bool ok = true;

		switch (option) {
		case 'n': options.ranks = atoi(optarg); ok = options.ranks >= 1 && options.ranks <= BENCH_MAX_RANKS; break;
		case 'b': options.min_size = bench_parse_size(optarg); ok = options.min_size > 0; break;
		case 'e': options.max_size = bench_parse_size(optarg); break;
		case 'f': options.factor = (unsigned int) atoi(optarg); break;
		case 'c': ok = bench_parse_collectives(&options, optarg); break;
		case 'd': ok = bench_parse_datatype(&options, optarg); break;
		case 'o': ok = bench_parse_op(&options, optarg); break;
		case 'i': options.iterations = atoi(optarg); ok = options.iterations > 0; break;
		case 'C': options.format = BENCH_CSV; break;
		case 'J': options.format = BENCH_JSON; break;
		case 'P': options.plot = optarg; break;
		case 'h': bench_usage(stdout); return 0;
		default: ok = false;
		}
		if (!ok) {
			bench_usage(stderr);
			return 2;
		}
	}
#ifdef BOLT_BENCH_MPI
	return bench_start_mpi(&options, &argc, &argv);
#else
	return bench_start(&options);
#endif
}
