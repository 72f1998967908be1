#include <stdio.h>
#include <stdlib.h>
#include <criterion/criterion.h>
#include "collective_fixture.h"

static int body(struct collective_rank *rank, void *argument)
{
	size_t count = *(size_t *) argument;
	int32_t *in = calloc(count, 4), *out = calloc(count, 4);
	int context, error = 0, ret;

	for (size_t i = 0; i < count; i++)
		in[i] = (int32_t) (i + rank->rank);
	ret = (int) fi_allreduce(rank->ep, in, count, NULL, out, NULL, rank->coll_addr, FI_INT32, FI_SUM, 0, &context);
	if (!ret)
		ret = collective_wait(rank, &context, &error);
	for (size_t i = 0; !ret && i < count; i++) {
		int32_t expect = (int32_t) (i * rank->size + rank->size * (rank->size - 1) / 2);
		if (out[i] != expect) {
			fprintf(stderr, "rank %d: [%zu] %d != %d\n", rank->rank, i, out[i], expect);
			ret = -1;
		}
	}
	if (!ret)
		ret = (int) fi_barrier(rank->ep, rank->coll_addr, &context);
	if (!ret)
		ret = collective_wait(rank, &context, &error);
	free(in);
	free(out);
	return ret;
}

Test(smoke, allreduce)
{
	size_t counts[] = { 1, 17, 100000, 1 << 22 };
	for (int size = 2; size <= 4; size++)
		for (size_t i = 0; i < 4; i++) {
			struct collective_options options = { .profile = "rocev2", .size = size };
			cr_assert_eq(collective_run(&options, "smoke", body, &counts[i]), 0, "size %d count %zu", size, counts[i]);
		}
}
