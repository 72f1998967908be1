/*
 * bolt_reduce.c: reduction kernels for every datatype and operation bolt's
 * collectives offer. Each is one plain loop over the elements, which the
 * compiler vectorises (this file is built with -O3 and the vectoriser's
 * options, see configure.ac: at GCC's -O2 they ran scalar, 2 to 3 times
 * slower in cache).
 * Signed integers wrap like their unsigned counterparts instead of
 * overflowing, so every rank computes the same bits. float16 and bfloat16
 * are widened to float32 for each step and rounded back to nearest even.
 */
#include <complex.h>
#include <string.h>

#include "collective/bolt_reduce.h"

#define BOLT_REDUCE_DATATYPES 18        /* FI_INT8 .. FI_BOLT_BFLOAT16 */
#define BOLT_REDUCE_OPS (FI_BXOR + 1)   /* FI_MIN .. FI_BXOR */

/* ---- float16 and bfloat16 ---- */

static inline uint32_t bolt_reduce_float_bits(float value)
{
	uint32_t bits;

	memcpy(&bits, &value, sizeof(bits));
	return bits;
}

static inline float bolt_reduce_bits_float(uint32_t bits)
{
	float value;

	memcpy(&value, &bits, sizeof(value));
	return value;
}

float bolt_float16_to_float(uint16_t half)
{
	uint32_t sign = (uint32_t) (half & 0x8000) << 16;
	uint32_t magnitude = (uint32_t) (half & 0x7fff) << 13;
	uint32_t exponent = magnitude & 0x0f800000;
	uint32_t bits = magnitude + ((127 - 15) << 23);

	if (exponent == 0x0f800000) {
		bits += (128 - 16) << 23;               /* infinity or NaN */
	} else if (exponent == 0) {
		/* Subnormal: let the FPU normalise it. */
		bits = bolt_reduce_float_bits(bolt_reduce_bits_float(bits + (1 << 23)) -
					      bolt_reduce_bits_float(113u << 23));
	}
	return bolt_reduce_bits_float(bits | sign);
}

uint16_t bolt_float_to_float16(float value)
{
	uint32_t bits = bolt_reduce_float_bits(value);
	uint16_t sign = (uint16_t) ((bits >> 16) & 0x8000);
	uint32_t magnitude = bits & 0x7fffffff;

	if (magnitude > 0x7f800000)
		return sign | 0x7e00;                   /* NaN stays NaN */
	if (magnitude >= 0x477ff000)
		return sign | 0x7c00;                   /* 65520 and above round to infinity */
	if (magnitude < 0x38800000) {
		/* Below the smallest normal: adding 0.5 leaves exactly the subnormal's
		 * bits in the low mantissa, rounded to nearest even by the FPU. */
		float shifted = bolt_reduce_bits_float(magnitude) + 0.5f;

		return sign | (uint16_t) (bolt_reduce_float_bits(shifted) - 0x3f000000u);
	}
	magnitude += ((uint32_t) (15 - 127) << 23) + 0xfff + ((magnitude >> 13) & 1);
	return sign | (uint16_t) (magnitude >> 13);
}

float bolt_bfloat16_to_float(uint16_t bfloat)
{
	return bolt_reduce_bits_float((uint32_t) bfloat << 16);
}

uint16_t bolt_float_to_bfloat16(float value)
{
	uint32_t bits = bolt_reduce_float_bits(value);

	if ((bits & 0x7fffffff) > 0x7f800000)
		return (uint16_t) ((bits >> 16) | 0x40);        /* a quiet NaN */
	bits += 0x7fff + ((bits >> 16) & 1);
	return (uint16_t) (bits >> 16);
}

/* ---- Kernels ---- */

/* One kernel: x and y are the operands, expression the result. */
#define BOLT_REDUCE_KERNEL(name, type, expression) \
	static void name(void *destination, const void *left, const void *right, size_t count) \
	{ \
		type *out = destination; \
		const type *in_left = left, *in_right = right; \
		for (size_t i = 0; i < count; i++) { \
			type x = in_left[i], y = in_right[i]; \
			out[i] = (type) (expression); \
		} \
	}

#define BOLT_REDUCE_ORDERED(suffix, type) \
	BOLT_REDUCE_KERNEL(bolt_reduce_min_##suffix, type, x < y ? x : y) \
	BOLT_REDUCE_KERNEL(bolt_reduce_max_##suffix, type, x > y ? x : y)

/*
 * Integers: arithmetic in the unsigned type, so that overflow wraps. The 1u
 * keeps a product of 16-bit operands unsigned: promoted to int, 65535 * 65535
 * would overflow.
 */
#define BOLT_REDUCE_INTEGER(suffix, type, unsigned_type) \
	BOLT_REDUCE_ORDERED(suffix, type) \
	BOLT_REDUCE_KERNEL(bolt_reduce_sum_##suffix, type, (unsigned_type) x + (unsigned_type) y) \
	BOLT_REDUCE_KERNEL(bolt_reduce_prod_##suffix, type, \
			   (unsigned_type) x * 1u * (unsigned_type) y) \
	BOLT_REDUCE_KERNEL(bolt_reduce_lor_##suffix, type, x || y) \
	BOLT_REDUCE_KERNEL(bolt_reduce_land_##suffix, type, x && y) \
	BOLT_REDUCE_KERNEL(bolt_reduce_bor_##suffix, type, x | y) \
	BOLT_REDUCE_KERNEL(bolt_reduce_band_##suffix, type, x & y) \
	BOLT_REDUCE_KERNEL(bolt_reduce_lxor_##suffix, type, !x != !y) \
	BOLT_REDUCE_KERNEL(bolt_reduce_bxor_##suffix, type, x ^ y)

#define BOLT_REDUCE_ARITHMETIC(suffix, type) \
	BOLT_REDUCE_KERNEL(bolt_reduce_sum_##suffix, type, x + y) \
	BOLT_REDUCE_KERNEL(bolt_reduce_prod_##suffix, type, x * y)

#define BOLT_REDUCE_FLOAT(suffix, type) \
	BOLT_REDUCE_ORDERED(suffix, type) \
	BOLT_REDUCE_ARITHMETIC(suffix, type)

/* 16-bit floats: widen, apply, round back. */
#define BOLT_REDUCE_HALF(suffix, widen, narrow) \
	BOLT_REDUCE_KERNEL(bolt_reduce_min_##suffix, uint16_t, \
			   narrow(widen(x) < widen(y) ? widen(x) : widen(y))) \
	BOLT_REDUCE_KERNEL(bolt_reduce_max_##suffix, uint16_t, \
			   narrow(widen(x) > widen(y) ? widen(x) : widen(y))) \
	BOLT_REDUCE_KERNEL(bolt_reduce_sum_##suffix, uint16_t, narrow(widen(x) + widen(y))) \
	BOLT_REDUCE_KERNEL(bolt_reduce_prod_##suffix, uint16_t, narrow(widen(x) * widen(y)))

BOLT_REDUCE_INTEGER(int8, int8_t, uint8_t)
BOLT_REDUCE_INTEGER(uint8, uint8_t, uint8_t)
BOLT_REDUCE_INTEGER(int16, int16_t, uint16_t)
BOLT_REDUCE_INTEGER(uint16, uint16_t, uint16_t)
BOLT_REDUCE_INTEGER(int32, int32_t, uint32_t)
BOLT_REDUCE_INTEGER(uint32, uint32_t, uint32_t)
BOLT_REDUCE_INTEGER(int64, int64_t, uint64_t)
BOLT_REDUCE_INTEGER(uint64, uint64_t, uint64_t)
BOLT_REDUCE_INTEGER(int128, __int128, unsigned __int128)
BOLT_REDUCE_INTEGER(uint128, unsigned __int128, unsigned __int128)
BOLT_REDUCE_FLOAT(float, float)
BOLT_REDUCE_FLOAT(double, double)
BOLT_REDUCE_FLOAT(long_double, long double)
BOLT_REDUCE_ARITHMETIC(float_complex, float complex)
BOLT_REDUCE_ARITHMETIC(double_complex, double complex)
BOLT_REDUCE_ARITHMETIC(long_double_complex, long double complex)
BOLT_REDUCE_HALF(float16, bolt_float16_to_float, bolt_float_to_float16)
BOLT_REDUCE_HALF(bfloat16, bolt_bfloat16_to_float, bolt_float_to_bfloat16)

#define BOLT_REDUCE_ROW_INTEGER(suffix) { \
	[FI_MIN] = bolt_reduce_min_##suffix, [FI_MAX] = bolt_reduce_max_##suffix, \
	[FI_SUM] = bolt_reduce_sum_##suffix, [FI_PROD] = bolt_reduce_prod_##suffix, \
	[FI_LOR] = bolt_reduce_lor_##suffix, [FI_LAND] = bolt_reduce_land_##suffix, \
	[FI_BOR] = bolt_reduce_bor_##suffix, [FI_BAND] = bolt_reduce_band_##suffix, \
	[FI_LXOR] = bolt_reduce_lxor_##suffix, [FI_BXOR] = bolt_reduce_bxor_##suffix }
#define BOLT_REDUCE_ROW_FLOAT(suffix) { \
	[FI_MIN] = bolt_reduce_min_##suffix, [FI_MAX] = bolt_reduce_max_##suffix, \
	[FI_SUM] = bolt_reduce_sum_##suffix, [FI_PROD] = bolt_reduce_prod_##suffix }
#define BOLT_REDUCE_ROW_COMPLEX(suffix) { \
	[FI_SUM] = bolt_reduce_sum_##suffix, [FI_PROD] = bolt_reduce_prod_##suffix }

static const bolt_reduce_function bolt_reduce_table[BOLT_REDUCE_DATATYPES][BOLT_REDUCE_OPS] = {
	[FI_INT8] = BOLT_REDUCE_ROW_INTEGER(int8),
	[FI_UINT8] = BOLT_REDUCE_ROW_INTEGER(uint8),
	[FI_INT16] = BOLT_REDUCE_ROW_INTEGER(int16),
	[FI_UINT16] = BOLT_REDUCE_ROW_INTEGER(uint16),
	[FI_INT32] = BOLT_REDUCE_ROW_INTEGER(int32),
	[FI_UINT32] = BOLT_REDUCE_ROW_INTEGER(uint32),
	[FI_INT64] = BOLT_REDUCE_ROW_INTEGER(int64),
	[FI_UINT64] = BOLT_REDUCE_ROW_INTEGER(uint64),
	[FI_INT128] = BOLT_REDUCE_ROW_INTEGER(int128),
	[FI_UINT128] = BOLT_REDUCE_ROW_INTEGER(uint128),
	[FI_FLOAT] = BOLT_REDUCE_ROW_FLOAT(float),
	[FI_DOUBLE] = BOLT_REDUCE_ROW_FLOAT(double),
	[FI_LONG_DOUBLE] = BOLT_REDUCE_ROW_FLOAT(long_double),
	[FI_FLOAT_COMPLEX] = BOLT_REDUCE_ROW_COMPLEX(float_complex),
	[FI_DOUBLE_COMPLEX] = BOLT_REDUCE_ROW_COMPLEX(double_complex),
	[FI_LONG_DOUBLE_COMPLEX] = BOLT_REDUCE_ROW_COMPLEX(long_double_complex),
	[FI_BOLT_FLOAT16] = BOLT_REDUCE_ROW_FLOAT(float16),
	[FI_BOLT_BFLOAT16] = BOLT_REDUCE_ROW_FLOAT(bfloat16),
};

static const size_t bolt_reduce_sizes[BOLT_REDUCE_DATATYPES] = {
	[FI_INT8] = 1, [FI_UINT8] = 1, [FI_INT16] = 2, [FI_UINT16] = 2,
	[FI_INT32] = 4, [FI_UINT32] = 4, [FI_INT64] = 8, [FI_UINT64] = 8,
	[FI_INT128] = 16, [FI_UINT128] = 16,
	[FI_FLOAT] = sizeof(float), [FI_DOUBLE] = sizeof(double),
	[FI_LONG_DOUBLE] = sizeof(long double),
	[FI_FLOAT_COMPLEX] = sizeof(float complex), [FI_DOUBLE_COMPLEX] = sizeof(double complex),
	[FI_LONG_DOUBLE_COMPLEX] = sizeof(long double complex),
	[FI_BOLT_FLOAT16] = 2, [FI_BOLT_BFLOAT16] = 2,
};

bolt_reduce_function bolt_reduce_lookup(enum fi_datatype datatype, enum fi_op op)
{
	if ((unsigned int) datatype >= BOLT_REDUCE_DATATYPES || (unsigned int) op >= BOLT_REDUCE_OPS)
		return NULL;
	return bolt_reduce_table[datatype][op];
}

size_t bolt_reduce_datatype_size(enum fi_datatype datatype)
{
	if ((unsigned int) datatype >= BOLT_REDUCE_DATATYPES)
		return 0;
	return bolt_reduce_sizes[datatype];
}
