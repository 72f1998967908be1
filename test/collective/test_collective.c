/*
 * test_collective.c: every collective x datatype x op x size (1 element, an
 * odd count, a count that is no multiple of the ring's segment) for groups
 * of 2, 3, 4 and 8 ranks on both profiles, with every algorithm (fully
 * connected, recursive doubling for what it runs, and the ring and the
 * chain with tiny segments so that many lanes, steps and hops run), each
 * result checked against
 * a plain reference computed here. Inputs
 * are exact in every datatype, so any reduction order gives the reference's
 * bits; a separate check has every rank get the same bits from inexact
 * floats. Then 64 MiB float32 all-reduces.
 */
#include <complex.h>
#include <stddef.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <utlist.h>

#include <rdma/fi_tagged.h>

#include "bolt_endpoint.h"
#include "collective_fixture.h"
#include "rails/bolt_mr_cache.h"
#include "rdm_fixture.h"

#define TEST_SEGMENT_SIZE 256           /* FI_BOLT_COLLECTIVE_SEGMENT_SIZE for the matrix */

enum test_kind { TEST_SIGNED, TEST_UNSIGNED, TEST_REAL, TEST_COMPLEX, TEST_HALF, TEST_BFLOAT };

struct test_type {
	enum fi_datatype datatype;
	const char *name;
	enum test_kind kind;
	size_t size;
};

static const struct test_type test_types[] = {
	{ FI_INT8, "int8", TEST_SIGNED, 1 }, { FI_UINT8, "uint8", TEST_UNSIGNED, 1 },
	{ FI_INT16, "int16", TEST_SIGNED, 2 }, { FI_UINT16, "uint16", TEST_UNSIGNED, 2 },
	{ FI_INT32, "int32", TEST_SIGNED, 4 }, { FI_UINT32, "uint32", TEST_UNSIGNED, 4 },
	{ FI_INT64, "int64", TEST_SIGNED, 8 }, { FI_UINT64, "uint64", TEST_UNSIGNED, 8 },
	{ FI_INT128, "int128", TEST_SIGNED, 16 }, { FI_UINT128, "uint128", TEST_UNSIGNED, 16 },
	{ FI_FLOAT, "float", TEST_REAL, sizeof(float) },
	{ FI_DOUBLE, "double", TEST_REAL, sizeof(double) },
	{ FI_LONG_DOUBLE, "long double", TEST_REAL, sizeof(long double) },
	{ FI_FLOAT_COMPLEX, "float complex", TEST_COMPLEX, sizeof(float complex) },
	{ FI_DOUBLE_COMPLEX, "double complex", TEST_COMPLEX, sizeof(double complex) },
	{ FI_LONG_DOUBLE_COMPLEX, "long double complex", TEST_COMPLEX, sizeof(long double complex) },
	{ FI_BOLT_FLOAT16, "float16", TEST_HALF, 2 },
	{ FI_BOLT_BFLOAT16, "bfloat16", TEST_BFLOAT, 2 },
};

static const enum fi_op test_integer_ops[] = {
	FI_MIN, FI_MAX, FI_SUM, FI_PROD, FI_LOR, FI_LAND, FI_BOR, FI_BAND, FI_LXOR, FI_BXOR,
};
static const enum fi_op test_float_ops[] = { FI_MIN, FI_MAX, FI_SUM, FI_PROD };
static const enum fi_op test_complex_ops[] = { FI_SUM, FI_PROD };

static uint64_t test_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* ---- Exact values: half and bfloat16 encodings of small integers and powers of two ---- */

static uint16_t test_encode_half(double value, bool bfloat)
{
	int mantissa_bits = bfloat ? 7 : 10, bias = bfloat ? 127 : 15;
	uint16_t sign = value < 0 ? 0x8000 : 0;
	double magnitude = value < 0 ? -value : value;
	int exponent = 0;

	if (magnitude == 0)
		return sign;
	while (magnitude >= 2) {
		magnitude /= 2;
		exponent++;
	}
	while (magnitude < 1) {
		magnitude *= 2;
		exponent--;
	}
	return sign | (uint16_t) ((exponent + bias) << mantissa_bits) |
	       (uint16_t) ((magnitude - 1) * (1 << mantissa_bits));
}

static double test_decode_half(uint16_t bits, bool bfloat)
{
	int mantissa_bits = bfloat ? 7 : 10, bias = bfloat ? 127 : 15;
	int exponent = (bits & 0x7fff) >> mantissa_bits;
	double value = 1 + (double) (bits & ((1 << mantissa_bits) - 1)) / (1 << mantissa_bits);

	if (!(bits & 0x7fff))
		return 0;
	for (; exponent > bias; exponent--)
		value *= 2;
	for (; exponent < bias; exponent++)
		value /= 2;
	return bits & 0x8000 ? -value : value;
}

/* ---- Values and the reference ---- */

static bool test_is_integer(const struct test_type *type)
{
	return type->kind == TEST_SIGNED || type->kind == TEST_UNSIGNED;
}

/* A small integer, or for products a factor of +-1 or +-2: exact in every type, in any order. */
static int test_small(enum fi_op op, uint64_t random)
{
	static const int factors[] = { 1, -1, 2, 1, 1, -1 };

	if (op == FI_PROD)
		return factors[random % 6];
	return (int) (random % 17) - 8;
}

static void test_value(const struct test_type *type, enum fi_op op, int rank, size_t index,
		       uint64_t salt, void *out)
{
	uint64_t random = test_hash(salt * 1000003 + (uint64_t) rank * 7919 + index);
	unsigned __int128 wide = ((unsigned __int128) test_hash(random) << 64) | random;

	switch (type->kind) {
	case TEST_SIGNED:
	case TEST_UNSIGNED:
		/* Logical ops need zeros too. */
		if ((op == FI_LOR || op == FI_LAND || op == FI_LXOR) && random % 3 == 0)
			wide = 0;
		memcpy(out, &wide, type->size);
		break;
	case TEST_REAL: {
		long double value = test_small(op, random);

		if (type->datatype == FI_FLOAT)
			*(float *) out = (float) value;
		else if (type->datatype == FI_DOUBLE)
			*(double *) out = (double) value;
		else
			*(long double *) out = value;
		break;
	}
	case TEST_COMPLEX: {
		long double real = test_small(op, random), imaginary = test_small(op, random >> 8);

		if (op == FI_PROD && random % 4)
			imaginary = 0;          /* keeps products small */
		if (type->datatype == FI_FLOAT_COMPLEX)
			*(float complex *) out = (float) real + (float) imaginary * I;
		else if (type->datatype == FI_DOUBLE_COMPLEX)
			*(double complex *) out = (double) real + (double) imaginary * I;
		else
			*(long double complex *) out = real + imaginary * I;
		break;
	}
	default:
		*(uint16_t *) out = test_encode_half(test_small(op, random), type->kind == TEST_BFLOAT);
	}
}

static unsigned __int128 test_load_integer(const struct test_type *type, const void *in)
{
	unsigned __int128 value = 0;

	memcpy(&value, in, type->size);
	if (type->kind == TEST_SIGNED && type->size < 16 &&
	    (value >> (type->size * 8 - 1)) & 1)
		value |= ~(unsigned __int128) 0 << (type->size * 8);
	return value;
}

static unsigned __int128 test_integer_op(const struct test_type *type, enum fi_op op,
					 unsigned __int128 x, unsigned __int128 y)
{
	bool signed_less = (__int128) x < (__int128) y;
	bool less = type->kind == TEST_SIGNED ? signed_less : x < y;

	switch (op) {
	case FI_MIN: return less ? x : y;
	case FI_MAX: return less ? y : x;
	case FI_SUM: return x + y;
	case FI_PROD: return x * y;
	case FI_LOR: return x || y;
	case FI_LAND: return x && y;
	case FI_BOR: return x | y;
	case FI_BAND: return x & y;
	case FI_LXOR: return !x != !y;
	default: return x ^ y;
	}
}

static long double complex test_load_number(const struct test_type *type, const void *in)
{
	switch ((int) type->datatype) {
	case FI_FLOAT: return *(const float *) in;
	case FI_DOUBLE: return *(const double *) in;
	case FI_LONG_DOUBLE: return *(const long double *) in;
	case FI_FLOAT_COMPLEX: return *(const float complex *) in;
	case FI_DOUBLE_COMPLEX: return *(const double complex *) in;
	case FI_LONG_DOUBLE_COMPLEX: return *(const long double complex *) in;
	default: return test_decode_half(*(const uint16_t *) in, type->kind == TEST_BFLOAT);
	}
}

static void test_store_number(const struct test_type *type, long double complex value, void *out)
{
	switch ((int) type->datatype) {
	case FI_FLOAT: *(float *) out = (float) creall(value); break;
	case FI_DOUBLE: *(double *) out = (double) creall(value); break;
	case FI_LONG_DOUBLE: *(long double *) out = creall(value); break;
	case FI_FLOAT_COMPLEX: *(float complex *) out = (float complex) value; break;
	case FI_DOUBLE_COMPLEX: *(double complex *) out = (double complex) value; break;
	case FI_LONG_DOUBLE_COMPLEX: *(long double complex *) out = value; break;
	default:
		*(uint16_t *) out = test_encode_half((double) creall(value), type->kind == TEST_BFLOAT);
	}
}

/* accumulator = accumulator op value, plainly. */
static void test_reference_op(const struct test_type *type, enum fi_op op, void *accumulator,
			      const void *value)
{
	long double complex x, y;

	if (test_is_integer(type)) {
		unsigned __int128 result = test_integer_op(type, op, test_load_integer(type, accumulator),
							   test_load_integer(type, value));

		memcpy(accumulator, &result, type->size);
		return;
	}
	x = test_load_number(type, accumulator);
	y = test_load_number(type, value);
	switch (op) {
	case FI_MIN: x = creall(x) < creall(y) ? x : y; break;
	case FI_MAX: x = creall(x) > creall(y) ? x : y; break;
	case FI_SUM: x = x + y; break;
	default: x = x * y; break;
	}
	test_store_number(type, x, accumulator);
}

/*
 * Integers bit for bit; numbers by value, since complex products reach a zero
 * whose sign depends on the order (exact values, so == is exact).
 */
static bool test_element_equal(const struct test_type *type, const char *left, const char *right)
{
	if (test_is_integer(type))
		return !memcmp(left, right, type->size);
	return test_load_number(type, left) == test_load_number(type, right);
}

/* ---- The collectives, one call each ---- */

struct test_case {
	const struct test_type *type;
	enum fi_collective_op kind;
	enum fi_op op;
	size_t count;
	uint64_t salt;
};

static ssize_t test_post(struct collective_rank *rank, const struct test_case *test, void *input,
			 void *result, void *context)
{
	enum fi_datatype datatype = test->type->datatype;

	switch (test->kind) {
	case FI_ALLREDUCE:
		return fi_allreduce(rank->endpoint.ep, input, test->count, NULL, result, NULL, rank->endpoint.coll_addr,
				    datatype, test->op, 0, context);
	case FI_REDUCE_SCATTER:
		return fi_reduce_scatter(rank->endpoint.ep, input, test->count, NULL, result, NULL,
					 rank->endpoint.coll_addr, datatype, test->op, 0, context);
	case FI_ALLGATHER:
		return fi_allgather(rank->endpoint.ep, input, test->count, NULL, result, NULL, rank->endpoint.coll_addr,
				    datatype, 0, context);
	case FI_ALLTOALL:
		return fi_alltoall(rank->endpoint.ep, input, test->count, NULL, result, NULL, rank->endpoint.coll_addr,
				   datatype, 0, context);
	default:
		/* The last rank is the root: it sends its input, the others receive into result. */
		return fi_broadcast(rank->endpoint.ep, rank->rank == rank->size - 1 ? input : result, test->count,
				    NULL, rank->endpoint.coll_addr, rank->addresses[rank->size - 1], datatype, 0,
				    context);
	}
}

/* Elements of input and result per rank. */
static void test_lengths(const struct test_case *test, int size, size_t *input, size_t *result)
{
	bool blocked_input = test->kind == FI_REDUCE_SCATTER || test->kind == FI_ALLTOALL;
	bool blocked_result = test->kind == FI_ALLGATHER || test->kind == FI_ALLTOALL;

	*input = blocked_input ? test->count * (size_t) size : test->count;
	*result = blocked_result ? test->count * (size_t) size : test->count;
}

/* What element index of rank's result must be. */
static void test_expected(const struct collective_rank *rank, const struct test_case *test,
			  size_t index, void *out)
{
	const struct test_type *type = test->type;
	size_t block = index / (test->count ? test->count : 1), offset = index % (test->count ? test->count : 1);
	char value[32];

	switch (test->kind) {
	case FI_ALLREDUCE:
	case FI_REDUCE_SCATTER: {
		size_t position = test->kind == FI_ALLREDUCE ? index :
				  (size_t) rank->rank * test->count + index;

		test_value(type, test->op, 0, position, test->salt, out);
		for (int other = 1; other < rank->size; other++) {
			test_value(type, test->op, other, position, test->salt, value);
			test_reference_op(type, test->op, out, value);
		}
		break;
	}
	case FI_ALLGATHER:
		test_value(type, test->op, (int) block, offset, test->salt, out);
		break;
	case FI_ALLTOALL:
		test_value(type, test->op, (int) block, (size_t) rank->rank * test->count + offset,
			   test->salt, out);
		break;
	default:
		test_value(type, test->op, rank->size - 1, index, test->salt, out);
	}
}

static int test_one(struct collective_rank *rank, const struct test_case *test)
{
	const struct test_type *type = test->type;
	size_t input_length, result_length;
	char *input, *result, expected[32];
	int context, error = 0, ret;

	test_lengths(test, rank->size, &input_length, &result_length);
	input = calloc(input_length + 1, type->size);
	result = calloc(result_length + 1, type->size);
	if (!input || !result) {
		free(input);
		free(result);
		return -FI_ENOMEM;
	}
	for (size_t index = 0; index < input_length; index++)
		test_value(type, test->op, rank->rank, index, test->salt, input + index * type->size);
	ret = (int) test_post(rank, test, input, result, &context);
	if (!ret)
		ret = collective_wait(rank, &context, &error);
	if (ret)
		fprintf(stderr, "rank %d: collective %d %s op %d count %zu: %s (error %d)\n", rank->rank,
			test->kind, type->name, test->op, test->count, fi_strerror(-ret), error);
	for (size_t index = 0; !ret && index < result_length; index++) {
		if (test->kind == FI_BROADCAST && rank->rank == rank->size - 1)
			break;
		test_expected(rank, test, index, expected);
		if (!test_element_equal(type, result + index * type->size, expected)) {
			fprintf(stderr, "rank %d of %d: collective %d %s op %d count %zu: element %zu differs\n",
				rank->rank, rank->size, test->kind, type->name, test->op, test->count, index);
			ret = -FI_EIO;
		}
	}
	free(input);
	free(result);
	return ret;
}

static void test_ops_of(const struct test_type *type, const enum fi_op **ops, size_t *count)
{
	if (test_is_integer(type)) {
		*ops = test_integer_ops;
		*count = sizeof(test_integer_ops) / sizeof(test_integer_ops[0]);
	} else if (type->kind == TEST_COMPLEX) {
		*ops = test_complex_ops;
		*count = sizeof(test_complex_ops) / sizeof(test_complex_ops[0]);
	} else {
		*ops = test_float_ops;
		*count = sizeof(test_float_ops) / sizeof(test_float_ops[0]);
	}
}

/* Every collective on one datatype, at each count. */
static int test_datatype(struct collective_rank *rank, const struct test_type *type, uint64_t *salt)
{
	static const enum fi_collective_op movers[] = { FI_ALLGATHER, FI_ALLTOALL, FI_BROADCAST };
	static const enum fi_collective_op reducers[] = { FI_ALLREDUCE, FI_REDUCE_SCATTER };
	size_t counts[] = { 1, 37, 3 * (TEST_SEGMENT_SIZE / type->size) + 5 };
	const enum fi_op *ops;
	size_t op_count;
	int ret = 0;

	test_ops_of(type, &ops, &op_count);
	for (size_t c = 0; !ret && c < sizeof(counts) / sizeof(counts[0]); c++) {
		for (size_t r = 0; !ret && r < sizeof(reducers) / sizeof(reducers[0]); r++)
			for (size_t o = 0; !ret && o < op_count; o++) {
				struct test_case test = { type, reducers[r], ops[o], counts[c], ++*salt };

				ret = test_one(rank, &test);
			}
		for (size_t m = 0; !ret && m < sizeof(movers) / sizeof(movers[0]); m++) {
			struct test_case test = { type, movers[m], FI_SUM, counts[c], ++*salt };

			ret = test_one(rank, &test);
		}
	}
	return ret;
}

/* Inexact floats (random fractions): every rank must still end with the same bits. */
static int test_same_bits(struct collective_rank *rank)
{
	size_t count = 3 * (TEST_SEGMENT_SIZE / sizeof(float)) + 7;
	float *input = calloc(count, sizeof(float)), *result = calloc(count, sizeof(float));
	uint64_t hash = 0xcbf29ce484222325ULL;
	int context, error = 0, ret = input && result ? 0 : -FI_ENOMEM;

	for (size_t index = 0; !ret && index < count; index++)
		input[index] = (float) (test_hash((uint64_t) rank->rank * 131 + index) % 1000003) / 7919.0f;
	if (!ret)
		ret = (int) fi_allreduce(rank->endpoint.ep, input, count, NULL, result, NULL, rank->endpoint.coll_addr,
					 FI_FLOAT, FI_SUM, 0, &context);
	if (!ret)
		ret = collective_wait(rank, &context, &error);
	for (size_t index = 0; !ret && index < count; index++) {
		uint32_t bits;

		memcpy(&bits, &result[index], sizeof(bits));
		hash = (hash ^ bits) * 0x100000001b3ULL;
	}
	collective_publish(rank, hash);
	collective_barrier(rank);
	for (int other = 0; !ret && other < rank->size; other++)
		if (collective_published(rank, other) != hash)
			ret = -FI_EIO;
	free(input);
	free(result);
	return ret;
}

static int test_matrix(struct collective_rank *rank, void *argument)
{
	uint64_t salt = 0;
	int context, error, ret = 0;

	for (size_t t = 0; !ret && t < sizeof(test_types) / sizeof(test_types[0]); t++)
		ret = test_datatype(rank, &test_types[t], &salt);
	if (!ret)
		ret = test_same_bits(rank);
	if (!ret)
		ret = (int) fi_barrier(rank->endpoint.ep, rank->endpoint.coll_addr, &context);
	if (!ret)
		ret = collective_wait(rank, &context, &error);
	return ret;
}

/*
 * A focused set, for a real device in a virtual machine (test/rxe runs it on
 * Soft-RoCE, where every message costs far more): every collective on float
 * and int32, at each count.
 */
static int test_focused(struct collective_rank *rank, void *argument)
{
	uint64_t salt = 0;
	int ret = 0;

	for (size_t t = 0; !ret && t < sizeof(test_types) / sizeof(test_types[0]); t++)
		if (test_types[t].datatype == FI_FLOAT || test_types[t].datatype == FI_INT32)
			ret = test_datatype(rank, &test_types[t], &salt);
	return ret;
}

/*
 * Every algorithm: the ring and the chain for everything they run (the chain
 * broadcasts), then fully connected for
 * everything, then recursive doubling for what it runs (all-reduce and
 * barrier, with a member count that is not a power of two its fold too;
 * all-gather and reduce-scatter, recursive halving, with 2, 4 and 8).
 */
static void test_group_with(const char *profile, int size,
			    int (*body)(struct collective_rank *rank, void *argument))
{
	struct collective_options ring = {
		.profile = profile, .size = size, .ring_threshold = "0", .segment_size = "256",
	};
	struct collective_options direct = {
		.profile = profile, .size = size, .ring_threshold = "1073741824",
		.doubling_members = "32768",
	};
	struct collective_options doubling = {
		.profile = profile, .size = size, .ring_threshold = "1073741824",
		.doubling_members = "2",
	};

	cr_assert_eq(collective_run(&ring, "coll-ring", body, NULL), 0,
		     "ring, %d ranks on %s", size, profile);
	cr_assert_eq(collective_run(&direct, "coll-direct", body, NULL), 0,
		     "fully connected, %d ranks on %s", size, profile);
	cr_assert_eq(collective_run(&doubling, "coll-doubling", body, NULL), 0,
		     "recursive doubling, %d ranks on %s", size, profile);
}

static void test_group(const char *profile, int size)
{
	test_group_with(profile, size, test_matrix);
}

Test(collective, thunderbolt_2) { test_group("thunderbolt", 2); }
Test(collective, thunderbolt_3) { test_group("thunderbolt", 3); }
Test(collective, thunderbolt_4) { test_group("thunderbolt", 4); }
Test(collective, thunderbolt_8) { test_group("thunderbolt", 8); }
Test(collective, rocev2_2) { test_group("rocev2", 2); }
Test(collective, rocev2_3) { test_group("rocev2", 3); }
Test(collective, rocev2_4) { test_group("rocev2", 4); }
Test(collective, rocev2_8) { test_group("rocev2", 8); }
/*
 * The ring in 256-byte segments, whose lanes run ahead, with no room for
 * unexpected data: a member full of one neighbour's later segments still
 * takes the other neighbour's, which it needs first (FI_BOLT_UNEXPECTED_LIMIT
 * holds back credits per peer).
 */
Test(collective, ring_without_room_for_unexpected_data)
{
	struct collective_options ring = {
		.profile = "thunderbolt", .size = 8, .ring_threshold = "0", .segment_size = "256",
		.unexpected_limit = "0",
	};

	cr_assert_eq(collective_run(&ring, "coll-ring-limit", test_matrix, NULL), 0);
}

Test(collective_focused, ranks_2) { test_group_with("rocev2", 2, test_focused); }
Test(collective_focused, ranks_4) { test_group_with("rocev2", 4, test_focused); }

/* ---- The application's tagged receives never see collective messages ---- */

/* Waits for completions until one with context arrived. */
static int test_wait_context(struct collective_rank *rank, void *context)
{
	struct fi_cq_tagged_entry entry;
	int polls = 0;
	ssize_t ret;

	while (polls++ < 10000000) {
		ret = fi_cq_read(rank->endpoint.cq, &entry, 1);
		if (ret == 1 && entry.op_context == context)
			return 0;
		if (ret != -FI_EAGAIN && ret != 1)
			return (int) ret;
		sched_yield();
	}
	return -FI_ETIMEDOUT;
}

static int test_wildcard(struct collective_rank *rank, void *argument)
{
	char received[16] = { 0 }, message[16] = "application";
	int32_t input = rank->rank + 1, result = 0;
	int receive_context, send_context, context, error = 0, ret;

	/* A receive that would take any tag at all, posted before the collective's messages come. */
	ret = (int) fi_trecv(rank->endpoint.ep, received, sizeof(received), NULL, FI_ADDR_UNSPEC, 0, ~0ULL,
			     &receive_context);
	if (!ret)
		ret = (int) fi_allreduce(rank->endpoint.ep, &input, 1, NULL, &result, NULL, rank->endpoint.coll_addr,
					 FI_INT32, FI_SUM, 0, &context);
	if (!ret)
		ret = collective_wait(rank, &context, &error);  /* -FI_EOTHER if the receive took one */
	if (!ret && result != rank->size * (rank->size + 1) / 2)
		ret = -FI_EIO;
	collective_barrier(rank);
	if (!ret)
		ret = (int) fi_tsend(rank->endpoint.ep, message, sizeof(message), NULL,
				     rank->addresses[(rank->rank + 1) % rank->size], 5, &send_context);
	if (!ret)
		ret = test_wait_context(rank, &receive_context);
	if (!ret && strcmp(received, message))
		ret = -FI_EIO;
	collective_barrier(rank);
	return ret;
}

Test(collective, application_receives_apart)
{
	struct collective_options options = { .profile = "rocev2", .size = 3 };

	cr_assert_eq(collective_run(&options, "coll-apart", test_wildcard, NULL), 0);
}

/* ---- Which messages ask a rendezvous (FI_BOLT_COLLECTIVE_RENDEZVOUS_THRESHOLD) ---- */

#define TEST_RENDEZVOUS_COUNT (16384 / sizeof(float))     /* each rank's block: a 16 KiB message */

/*
 * An all-gather of 16 KiB blocks, each rank's block one message to the other
 * (point-to-point's rendezvous starts at 16 KiB): intact, and by rendezvous
 * only where argument says so.
 */
static int test_rendezvous_threshold(struct collective_rank *rank, void *argument)
{
	bool rendezvous = argument != NULL;
	float *input = malloc(TEST_RENDEZVOUS_COUNT * sizeof(float));
	float *result = calloc(TEST_RENDEZVOUS_COUNT * (size_t) rank->size, sizeof(float));
	int context, error = 0, ret = input && result ? 0 : -FI_ENOMEM;
	uint64_t before = rdm_registrations_used(&rank->endpoint);

	for (size_t index = 0; !ret && index < TEST_RENDEZVOUS_COUNT; index++)
		input[index] = (float) (rank->rank * 100000 + (int) index);
	if (!ret)
		ret = (int) fi_allgather(rank->endpoint.ep, input, TEST_RENDEZVOUS_COUNT, NULL, result,
					 NULL, rank->endpoint.coll_addr, FI_FLOAT, 0, &context);
	if (!ret)
		ret = collective_wait(rank, &context, &error);
	for (size_t index = 0; !ret && index < TEST_RENDEZVOUS_COUNT * (size_t) rank->size; index++)
		if (result[index] != (float) ((int) (index / TEST_RENDEZVOUS_COUNT) * 100000 +
					      (int) (index % TEST_RENDEZVOUS_COUNT)))
			ret = -FI_EIO;
	if (!ret && (rdm_registrations_used(&rank->endpoint) > before) != rendezvous) {
		fprintf(stderr, "rank %d: 16 KiB messages %s a rendezvous\n", rank->rank,
			rendezvous ? "did not ask" : "asked");
		ret = -FI_EOTHER;
	}
	free(result);
	free(input);
	return ret;
}

/* By default a collective's 16 KiB messages go in segments: it waits on each one. */
Test(collective, messages_below_the_threshold_in_segments)
{
	struct collective_options options = { .profile = "rocev2", .size = 2 };

	cr_assert_eq(collective_run(&options, "coll-rdv", test_rendezvous_threshold, NULL), 0);
}

Test(collective, messages_from_the_threshold_by_rendezvous)
{
	struct collective_options options = { .profile = "rocev2", .size = 2,
					       .rendezvous_threshold = "16384" };

	cr_assert_eq(collective_run(&options, "coll-rdv", test_rendezvous_threshold, &options), 0);
}

/* ---- Messages pulled by their receivers (RC) ---- */

/* 256 KiB and three floats: one rendezvous message to each member, not a multiple of a page. */
#define TEST_PULL_COUNT (65536 + 3)

/* A count of this rank's peers' protocol state (count names it), summed over every peer. */
static uint64_t test_peer_count(struct collective_rank *rank, size_t count)
{
	struct bolt_endpoint *endpoint = bolt_container_of(rank->endpoint.ep, struct bolt_endpoint, ep_fid);
	struct bolt_connection *connection, *next;
	uint64_t sum = 0;

	HASH_ITER(hh, endpoint->connection_manager.connections, connection, next)
		sum += *(const uint64_t *) ((const char *) bolt_peer_of(connection) + count);
	return sum;
}

/* This rank's messages that it read from a peer's buffer, from every peer. */
static uint64_t test_messages_pulled(struct collective_rank *rank)
{
	return test_peer_count(rank, offsetof(struct bolt_peer, messages_pulled));
}

/* Receives this rank granted ahead, and its messages written into receives granted it. */
static uint64_t test_tags_granted(struct collective_rank *rank)
{
	return test_peer_count(rank, offsetof(struct bolt_peer, tags_granted));
}

static uint64_t test_tag_grants_taken(struct collective_rank *rank)
{
	return test_peer_count(rank, offsetof(struct bolt_peer, tag_grants_taken));
}

/* Registrations peers may still read or write, of this rank's domain. */
static int test_exposed_registrations(struct collective_rank *rank)
{
	struct bolt_domain *domain = bolt_container_of(rank->endpoint.domain, struct bolt_domain, domain_fid);
	struct bolt_mr_cache_stats stats;

	bolt_mr_cache_stats(domain->primary.mr_cache, &stats);
	return stats.exposed;
}

/* How long a root that asks waits for its members to have granted their receives. */
#define TEST_ASK_LATE_US 100000

/* Records of transfers this rank still keeps for a peer: none once every operation ended. */
static int test_records_left(struct collective_rank *rank)
{
	struct bolt_endpoint *endpoint = bolt_container_of(rank->endpoint.ep, struct bolt_endpoint, ep_fid);
	struct bolt_connection *connection, *next;
	struct bolt_inbound *record;
	int count = 0;

	HASH_ITER(hh, endpoint->connection_manager.connections, connection, next)
		DL_FOREACH(bolt_peer_of(connection)->rendezvous, record)
			count++;
	return count;
}

/* What a test_pull run expects. */
struct test_pull_case {
	bool pulls;             /* members pull the root's messages, */
	bool only_last;         /* only the last rank (the root's previous), the others written to */
	bool reliable;          /* RC: no bounce buffer is exposed, so none may be after */
	bool ungranted;         /* FI_BOLT_COLLECTIVE_GRANTS=0: members written to grant nothing */
	bool asked;             /* the root (grants off) asks all the same: its members take back */
};

/*
 * Whether a rank's grants are as the case says: in operations where nobody
 * pulls, a member grants the root each of its two receives ahead (unless
 * grants are off), and the root takes one grant for each message it writes.
 */
static int test_pull_grants(struct collective_rank *rank, const struct test_pull_case *test)
{
	bool granting = !test->ungranted && !test->pulls;
	uint64_t granted = granting && rank->rank ? 2 : 0;
	uint64_t taken = granting && !test->asked && !rank->rank ? 2 * (uint64_t) (rank->size - 1) : 0;

	if (test_records_left(rank)) {
		fprintf(stderr, "rank %d: %d transfer records left\n", rank->rank, test_records_left(rank));
		return -FI_EOTHER;
	}
	if (test_tags_granted(rank) == granted && test_tag_grants_taken(rank) == taken)
		return 0;
	fprintf(stderr, "rank %d: %lu receives granted ahead, %lu grants taken, expected %lu and %lu\n",
		rank->rank, (unsigned long) test_tags_granted(rank),
		(unsigned long) test_tag_grants_taken(rank), (unsigned long) granted,
		(unsigned long) taken);
	return -FI_EOTHER;
}

/*
 * Broadcasts from rank 0, twice: intact at every member, each member's
 * message pulled by it where the case says so (else written by the root),
 * and on RC no buffer left exposed to a peer.
 */
static int test_pull(struct collective_rank *rank, void *argument)
{
	const struct test_pull_case *test = argument;
	float *buffer = malloc(TEST_PULL_COUNT * sizeof(float));
	int context, error = 0, ret = buffer ? 0 : -FI_ENOMEM;
	uint64_t expected = test->pulls && rank->rank &&
			    (!test->only_last || rank->rank == rank->size - 1) ? 2 : 0;

	for (int round = 0; !ret && round < 2; round++) {
		for (size_t index = 0; index < TEST_PULL_COUNT; index++)
			buffer[index] = rank->rank ? -1.0f : (float) (index % 100000 + (size_t) round);
		/* A root that asks does so once its members granted: their grants wait for it. */
		if (test->asked) {
			collective_barrier(rank);
			if (!rank->rank)
				usleep(TEST_ASK_LATE_US);
		}
		ret = (int) fi_broadcast(rank->endpoint.ep, buffer, TEST_PULL_COUNT, NULL,
					 rank->endpoint.coll_addr, rank->addresses[0], FI_FLOAT, 0, &context);
		if (!ret)
			ret = collective_wait(rank, &context, &error);
		for (size_t index = 0; !ret && index < TEST_PULL_COUNT; index++)
			if (buffer[index] != (float) (index % 100000 + (size_t) round))
				ret = -FI_EIO;
	}
	/* Every rank's sends and receives are done: the root's exposures went with its sends. */
	collective_barrier(rank);
	if (!ret && test_messages_pulled(rank) != expected) {
		fprintf(stderr, "rank %d: %lu messages pulled, expected %lu\n", rank->rank,
			(unsigned long) test_messages_pulled(rank), (unsigned long) expected);
		ret = -FI_EOTHER;
	}
	if (!ret)
		ret = test_pull_grants(rank, test);
	if (!ret && test->reliable && test_exposed_registrations(rank)) {
		fprintf(stderr, "rank %d: %d registrations still exposed\n", rank->rank,
			test_exposed_registrations(rank));
		ret = -FI_EOTHER;
	}
	free(buffer);
	return ret;
}

/* On RC each member reads the root's buffer itself (the table's choice from 2 MiB with three). */
Test(collective, rc_members_pull_a_broadcast)
{
	struct collective_options options = { .profile = "rocev2", .size = 3, .pull = "1" };
	struct test_pull_case test = { .pulls = true, .reliable = true };

	cr_assert_eq(collective_run(&options, "coll-pull", test_pull, &test), 0);
}

/*
 * FI_BOLT_COLLECTIVE_PULL=2 (the table's from 256 KiB to 2 MiB with three
 * and four): rank 3, the root's previous, pulls; ranks 1 and 2 are written to.
 */
Test(collective, rc_member_pulls_while_the_root_writes_to_the_others)
{
	struct collective_options options = { .profile = "rocev2", .size = 4, .pull = "2" };
	struct test_pull_case test = { .pulls = true, .only_last = true, .reliable = true };

	cr_assert_eq(collective_run(&options, "coll-pull", test_pull, &test), 0);
}

/* FI_BOLT_COLLECTIVE_PULL=0: the root writes, as on UC, which has no RDMA read. */
Test(collective, rc_broadcast_written_without_pull)
{
	struct collective_options options = { .profile = "rocev2", .size = 3, .pull = "0" };
	struct test_pull_case test = { .pulls = false, .reliable = true };

	cr_assert_eq(collective_run(&options, "coll-pull", test_pull, &test), 0);
}

/* On UC each member grants the root its receive ahead, and the root writes into it unasked. */
Test(collective, uc_broadcast_written)
{
	struct collective_options options = { .profile = "thunderbolt", .size = 3 };
	struct test_pull_case test = { .pulls = false, .reliable = false };

	cr_assert_eq(collective_run(&options, "coll-pull", test_pull, &test), 0);
}

/*
 * The root with grants off, its members with them on: the root asks, as a
 * peer that decided otherwise would, and each member's granted receive
 * takes the message all the same, its grant asked back and deregistered.
 */
Test(collective, rc_granted_receive_taken_by_a_request)
{
	struct collective_options options = { .profile = "rocev2", .size = 3, .pull = "0",
					       .grants_at_rank0 = "0" };
	struct test_pull_case test = { .pulls = false, .reliable = true, .asked = true };

	cr_assert_eq(collective_run(&options, "coll-pull", test_pull, &test), 0);
}

/* FI_BOLT_COLLECTIVE_GRANTS=0: the root asks, each member answers. */
Test(collective, uc_broadcast_written_without_grants)
{
	struct collective_options options = { .profile = "thunderbolt", .size = 3, .grants = "0" };
	struct test_pull_case test = { .pulls = false, .reliable = false, .ungranted = true };

	cr_assert_eq(collective_run(&options, "coll-pull", test_pull, &test), 0);
}

/*
 * The control rail's cable is cut while members pull, and restored: reads in
 * flight come back flushed (RC finds the cut when its retries run out) and
 * are written by the root instead, on the second cable.
 */
#define TEST_CUT_PLAN "at 1200ms cut cable 0; at 4500ms restore cable 0"
#define TEST_CUT_ROUNDS_AFTER 20        /* broadcasts once the cable is back */
#define TEST_CUT_LIMIT_MS 30000

/*
 * Whether the root goes on: until its port of the cut cable went down and up
 * again and some rounds more; -FI_ETIMEDOUT if that takes too long.
 */
static int test_cut_goes_on(struct collective_rank *rank, const struct timespec *start,
			    uint64_t *rounds_after, bool *more)
{
	struct bolt_domain *domain = bolt_container_of(rank->endpoint.domain, struct bolt_domain, domain_fid);

	if (domain->primary.state_changes >= 2)
		(*rounds_after)++;
	*more = *rounds_after < TEST_CUT_ROUNDS_AFTER;
	return *more && bolt_fixture_elapsed_ms(start) > TEST_CUT_LIMIT_MS ? -FI_ETIMEDOUT : 0;
}

/*
 * Broadcasts from rank 0, each checked, until it says stop in element 0;
 * argument: whether the member pulls them (else the root writes each into
 * the receive the member granted).
 */
static int test_pull_through_cut(struct collective_rank *rank, void *argument)
{
	const bool *pulled = argument;
	float *buffer = malloc(TEST_PULL_COUNT * sizeof(float));
	int context, error = 0, ret = buffer ? 0 : -FI_ENOMEM;
	uint64_t rounds_after = 0, round;
	struct timespec start;
	bool more = true;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (round = 0; !ret && more; round++) {
		if (!rank->rank)
			ret = test_cut_goes_on(rank, &start, &rounds_after, &more);
		for (size_t index = 1; index < TEST_PULL_COUNT; index++)
			buffer[index] = rank->rank ? -1.0f : (float) (index % 100000 + round % 1000);
		buffer[0] = rank->rank ? -1.0f : more ? 1.0f : 0.0f;
		if (!ret)
			ret = (int) fi_broadcast(rank->endpoint.ep, buffer, TEST_PULL_COUNT, NULL,
						 rank->endpoint.coll_addr, rank->addresses[0], FI_FLOAT, 0,
						 &context);
		if (!ret)
			ret = collective_wait(rank, &context, &error);
		more = buffer[0] == 1.0f;
		for (size_t index = 1; !ret && index < TEST_PULL_COUNT; index++)
			if (buffer[index] != (float) (index % 100000 + round % 1000))
				ret = -FI_EIO;
	}
	fprintf(stderr, "rank %d: %lu broadcasts, %lu pulled, %lu granted\n", rank->rank,
		(unsigned long) round, (unsigned long) test_messages_pulled(rank),
		(unsigned long) test_tags_granted(rank));
	if (!ret && rank->rank && !(*pulled ? test_messages_pulled(rank) : test_tags_granted(rank)))
		ret = -FI_EOTHER;
	free(buffer);
	return ret;
}

static void test_cut_run(const struct collective_options *options, bool pulled)
{
	int ret;

	setenv("FI_BOLT_SOFT_FAULT_PLAN", TEST_CUT_PLAN, 1);
	setenv("FI_BOLT_LIVENESS_TIMEOUT", "2000", 1);
	ret = collective_run(options, "coll-pull-cut", test_pull_through_cut, &pulled);
	unsetenv("FI_BOLT_SOFT_FAULT_PLAN");
	unsetenv("FI_BOLT_LIVENESS_TIMEOUT");
	cr_assert_eq(ret, 0);
}

Test(collective, rc_pulled_broadcasts_survive_a_cut_control_cable)
{
	struct collective_options options = { .profile = "rocev2", .size = 2, .topology = "mesh:2x2",
					       .pull = "1" };

	test_cut_run(&options, true);
}

/*
 * The same written into receives granted ahead, on both devices: grants and
 * writes in flight when the cable goes take the other one under the ids the
 * receivers gave them (key asks, moved stripes, on UC writes written again).
 */
Test(collective, rc_granted_broadcasts_survive_a_cut_control_cable)
{
	struct collective_options options = { .profile = "rocev2", .size = 2, .topology = "mesh:2x2",
					       .pull = "0" };

	test_cut_run(&options, false);
}

Test(collective, uc_granted_broadcasts_survive_a_cut_control_cable)
{
	struct collective_options options = { .profile = "thunderbolt", .size = 2,
					       .topology = "mesh:2x2" };

	test_cut_run(&options, false);
}

/* ---- float32 all-reduces of the table's sizes, with its algorithm choice and segments ---- */

#define TEST_LARGE_COUNT ((64u << 20) / sizeof(float))

/* One all-reduce of count floats, every element checked. */
static int test_allreduce_checked(struct collective_rank *rank, size_t count, bool in_place)
{
	float *input = malloc(count * sizeof(float));
	/* Zeroed: peers write into it from their processes, which valgrind cannot follow. */
	float *result = in_place ? input : calloc(count, sizeof(float));
	int context, error = 0, ret = input && result ? 0 : -FI_ENOMEM;

	for (size_t index = 0; !ret && index < count; index++)
		input[index] = (float) ((index * 7 + (size_t) rank->rank * 3) % 1000);
	if (!ret)
		ret = (int) fi_allreduce(rank->endpoint.ep, input, count, NULL, result, NULL,
					 rank->endpoint.coll_addr, FI_FLOAT, FI_SUM, 0, &context);
	if (!ret)
		ret = collective_wait(rank, &context, &error);
	for (size_t index = 0; !ret && index < count; index++) {
		float expected = 0;

		for (int other = 0; other < rank->size; other++)
			expected += (float) ((index * 7 + (size_t) other * 3) % 1000);
		if (result[index] != expected) {
			fprintf(stderr, "rank %d of %d: all-reduce of %zu%s: element %zu differs\n",
				rank->rank, rank->size, count, in_place ? " in place" : "", index);
			ret = -FI_EIO;
		}
	}
	if (!in_place)
		free(result);
	free(input);
	return ret;
}

/* 64 MiB: the ring in 4 MiB segments. */
static int test_large(struct collective_rank *rank, void *argument)
{
	return test_allreduce_checked(rank, TEST_LARGE_COUNT, argument != NULL);
}

/*
 * Middle sizes, where the table takes recursive doubling for three and four
 * members (the ring and the exchange around it), each a few elements over
 * to leave the halves uneven, in place and not.
 */
static int test_middle(struct collective_rank *rank, void *argument)
{
	static const size_t kibibytes[] = { 16, 32, 256, 512 };
	int ret = 0;

	for (size_t k = 0; !ret && k < sizeof(kibibytes) / sizeof(kibibytes[0]); k++)
		for (int in_place = 0; !ret && in_place < 2; in_place++)
			ret = test_allreduce_checked(rank, kibibytes[k] * 1024 / sizeof(float) + 3,
						     in_place);
	return ret;
}

static void test_middle_group(const char *profile, int size)
{
	struct collective_options options = { .profile = profile, .size = size };

	cr_assert_eq(collective_run(&options, "coll-middle", test_middle, NULL), 0,
		     "middle all-reduces, %d ranks on %s", size, profile);
}

Test(collective_middle, thunderbolt_3) { test_middle_group("thunderbolt", 3); }
Test(collective_middle, thunderbolt_4) { test_middle_group("thunderbolt", 4); }
Test(collective_middle, rocev2_3) { test_middle_group("rocev2", 3); }
Test(collective_middle, rocev2_4) { test_middle_group("rocev2", 4); }

Test(collective_large, thunderbolt_4)
{
	struct collective_options options = { .profile = "thunderbolt", .size = 4 };

	cr_assert_eq(collective_run(&options, "coll-large", test_large, NULL), 0);
}

Test(collective_large, thunderbolt_2)
{
	struct collective_options options = { .profile = "thunderbolt", .size = 2 };

	cr_assert_eq(collective_run(&options, "coll-large", test_large, NULL), 0);
}

#define TEST_LOSS_COUNT ((256u << 10) / sizeof(float))
/* 100 collectives a run: an all-reduce and an all-gather a round. */
#define TEST_LOSS_ROUNDS 50

/* Round's elements: 256 KiB, 16 KiB, 1 KiB, 64 B in turn (ring and direct both lose segments). */
static size_t test_loss_count(int round)
{
	return TEST_LOSS_COUNT >> (4 * (round % 4));
}

/* The value rank puts at index of round's input. */
static float test_loss_value(int rank, size_t index, int round)
{
	return (float) ((index * 7 + (size_t) rank * 3 + (size_t) round * 11) % 1000);
}

/* An all-reduce and an all-gather of round's size per rank, every element checked. */
static int test_loss_round(struct collective_rank *rank, float *input, float *result, int round)
{
	size_t count = test_loss_count(round);
	int context, error = 0, ret;

	for (size_t index = 0; index < count; index++)
		input[index] = test_loss_value(rank->rank, index, round);
	ret = (int) fi_allreduce(rank->endpoint.ep, input, count, NULL, result, NULL,
				 rank->endpoint.coll_addr, FI_FLOAT, FI_SUM, 0, &context);
	if (!ret)
		ret = collective_wait(rank, &context, &error);
	for (size_t index = 0; !ret && index < count; index++) {
		float expected = 0;

		for (int other = 0; other < rank->size; other++)
			expected += test_loss_value(other, index, round);
		if (result[index] != expected)
			ret = -FI_EIO;
	}
	if (!ret)
		ret = (int) fi_allgather(rank->endpoint.ep, input, count, NULL, result, NULL,
					 rank->endpoint.coll_addr, FI_FLOAT, 0, &context);
	if (!ret)
		ret = collective_wait(rank, &context, &error);
	for (size_t index = 0; !ret && index < count * (size_t) rank->size; index++)
		if (result[index] != test_loss_value((int) (index / count), index % count, round))
			ret = -FI_EIO;
	return ret;
}

static int test_loss(struct collective_rank *rank, void *argument)
{
	float *input = malloc(TEST_LOSS_COUNT * sizeof(float));
	float *result = calloc(TEST_LOSS_COUNT * (size_t) rank->size, sizeof(float));
	int ret = input && result ? 0 : -FI_ENOMEM;

	(void) argument;
	for (int round = 0; !ret && round < TEST_LOSS_ROUNDS; round++)
		ret = test_loss_round(rank, input, result, round);
	free(result);
	free(input);
	return ret;
}

/*
 * 1 % of UC packets dropped, the data by RDMA write: the lost segments are
 * written again, and every rank's all-reduce and all-gather are right.
 */
static void test_loss_group(int size)
{
	struct collective_options options = { .profile = "thunderbolt", .size = size };
	int ret;

	bolt_fixture_set_loss("10000", true);
	ret = collective_run(&options, "coll-loss", test_loss, NULL);
	bolt_fixture_clear_loss();
	cr_assert_eq(ret, 0, "%d ranks, 1 %% of packets dropped", size);
}

Test(collective_loss, thunderbolt_2_one_percent) { test_loss_group(2); }
Test(collective_loss, thunderbolt_3_one_percent) { test_loss_group(3); }

/* Twice (the first asks for the stripe rail), then the second cable has carried stripes. */
static int test_large_striped(struct collective_rank *rank, void *argument)
{
	int ret = test_large(rank, argument);

	if (!ret)
		ret = test_large(rank, argument);
	if (!ret && rdm_striped_bytes(rank->endpoint.ep, BOLT_MAX_DATA_RAILS, BOLT_MAX_CONNECTION_RAILS) == 0)
		ret = -FI_EOTHER;
	return ret;
}

/* Two hosts joined by two cables: the ring's segments stripe over both. */
Test(collective_large, thunderbolt_2_two_cables)
{
	struct collective_options options = { .profile = "thunderbolt", .size = 2, .topology = "mesh:2x2" };

	cr_assert_eq(collective_run(&options, "coll-cables", test_large_striped, NULL), 0);
}

/*
 * Three hosts, each cabled to the two others: a domain's own port reaches
 * one of them; the other is reached over its second port, found by probing.
 */
Test(collective_large, thunderbolt_3_mesh)
{
	struct collective_options options = { .profile = "thunderbolt", .size = 3, .topology = "mesh:3" };

	cr_assert_eq(collective_run(&options, "coll-mesh", test_large, NULL), 0);
}

Test(collective_large, thunderbolt_4_mesh)
{
	struct collective_options options = { .profile = "thunderbolt", .size = 4, .topology = "mesh:4" };

	cr_assert_eq(collective_run(&options, "coll-mesh", test_large, NULL), 0);
}

Test(collective_large, rocev2_8)
{
	struct collective_options options = { .profile = "rocev2", .size = 8 };

	cr_assert_eq(collective_run(&options, "coll-large", test_large, NULL), 0);
}

Test(collective_large, rocev2_3_in_place)
{
	struct collective_options options = { .profile = "rocev2", .size = 3 };

	cr_assert_eq(collective_run(&options, "coll-large", test_large, &options), 0);
}
