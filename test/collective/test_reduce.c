/*
 * test_reduce.c: the reduction kernels alone: float16 and bfloat16
 * conversions (rounding to nearest even, subnormals, infinities, NaN), and
 * kernels that wrap, compare and work in place.
 */
#include <math.h>
#include <string.h>
#include <criterion/criterion.h>

#include "collective/bolt_reduce.h"

static float bits_float(uint32_t bits)
{
	float value;

	memcpy(&value, &bits, sizeof(value));
	return value;
}

Test(reduce, float16_rounding)
{
	cr_expect_eq(bolt_float_to_float16(1.0f), 0x3c00);
	cr_expect_eq(bolt_float_to_float16(-2.0f), 0xc000);
	cr_expect_eq(bolt_float_to_float16(65504.0f), 0x7bff);
	cr_expect_eq(bolt_float_to_float16(65519.0f), 0x7bff);
	cr_expect_eq(bolt_float_to_float16(65520.0f), 0x7c00, "the tie above the largest rounds to infinity");
	cr_expect_eq(bolt_float_to_float16(INFINITY), 0x7c00);
	cr_expect_eq(bolt_float_to_float16(-0.0f), 0x8000);
	cr_expect_eq(bolt_float_to_float16(1.0f + 1.0f / 2048), 0x3c00, "a tie goes to even");
	cr_expect_eq(bolt_float_to_float16(1.0f + 3.0f / 2048), 0x3c02, "a tie goes to even");
	cr_expect_eq(bolt_float_to_float16(ldexpf(1, -24)), 0x0001, "the smallest subnormal");
	cr_expect_eq(bolt_float_to_float16(ldexpf(1, -25)), 0x0000, "half of it ties to zero");
	cr_expect_eq(bolt_float_to_float16(ldexpf(3, -25)), 0x0002, "a subnormal tie goes to even");
	cr_expect_eq(bolt_float_to_float16(NAN) & 0x7e00, 0x7e00);
	cr_expect(isnan(bolt_float16_to_float(0x7e00)));
	cr_expect_eq(bolt_float16_to_float(0x0001), ldexpf(1, -24));
	cr_expect_eq(bolt_float16_to_float(0xfbff), -65504.0f);
}

Test(reduce, float16_round_trip)
{
	for (uint32_t half = 0; half <= 0xffff; half++) {
		if ((half & 0x7c00) == 0x7c00 && (half & 0x3ff))
			continue;       /* NaNs keep being NaNs, not their payload */
		cr_assert_eq(bolt_float_to_float16(bolt_float16_to_float((uint16_t) half)), half,
			     "%#x", half);
	}
}

Test(reduce, bfloat16)
{
	cr_expect_eq(bolt_float_to_bfloat16(1.0f), 0x3f80);
	cr_expect_eq(bolt_float_to_bfloat16(1.0f + 1.0f / 256), 0x3f80, "a tie goes to even");
	cr_expect_eq(bolt_float_to_bfloat16(1.0f + 3.0f / 256), 0x3f82, "a tie goes to even");
	cr_expect_eq(bolt_float_to_bfloat16(bits_float(0x7f7fffff)), 0x7f80, "the largest float rounds up");
	cr_expect(isnan(bolt_bfloat16_to_float(bolt_float_to_bfloat16(NAN))));
	for (uint32_t bfloat = 0; bfloat <= 0xffff; bfloat++) {
		if ((bfloat & 0x7f80) == 0x7f80 && (bfloat & 0x7f))
			continue;
		cr_assert_eq(bolt_float_to_bfloat16(bolt_bfloat16_to_float((uint16_t) bfloat)), bfloat);
	}
}

Test(reduce, kernels)
{
	int8_t small[2] = { 127, -128 }, one[2] = { 1, -1 };
	int32_t left[3] = { -5, 7, 0 }, right[3] = { 3, -9, 0 }, out[3];
	uint16_t halves[2] = { 0x3c00, 0x4000 }, more[2] = { 0x3c00, 0x3c00 };
	uint16_t wide[2] = { 0xffff, 0x100 };

	bolt_reduce_lookup(FI_INT8, FI_SUM)(small, small, one, 2);
	cr_expect(small[0] == -128 && small[1] == 127, "signed sums wrap");
	bolt_reduce_lookup(FI_UINT16, FI_PROD)(wide, wide, wide, 2);
	cr_expect(wide[0] == 1 && wide[1] == 0, "16-bit products wrap, without overflowing an int");
	bolt_reduce_lookup(FI_INT32, FI_MIN)(out, left, right, 3);
	cr_expect(out[0] == -5 && out[1] == -9 && out[2] == 0);
	bolt_reduce_lookup(FI_INT32, FI_LXOR)(out, left, right, 3);
	cr_expect(out[0] == 0 && out[1] == 0 && out[2] == 0);
	bolt_reduce_lookup(FI_INT32, FI_LOR)(out, left, right, 3);
	cr_expect(out[0] == 1 && out[1] == 1 && out[2] == 0);
	bolt_reduce_lookup(FI_BOLT_FLOAT16, FI_SUM)(halves, halves, more, 2);
	cr_expect(halves[0] == 0x4000 && halves[1] == 0x4200, "1+1=2, 2+1=3 in place");
	cr_expect_null(bolt_reduce_lookup(FI_FLOAT, FI_BOR));
	cr_expect_null(bolt_reduce_lookup(FI_DOUBLE_COMPLEX, FI_MAX));
	cr_expect_null(bolt_reduce_lookup(FI_INT32, FI_ATOMIC_WRITE));
	cr_expect_eq(bolt_reduce_datatype_size(FI_LONG_DOUBLE_COMPLEX), sizeof(long double) * 2);
	cr_expect_eq(bolt_reduce_datatype_size(FI_VOID), 0);
}
