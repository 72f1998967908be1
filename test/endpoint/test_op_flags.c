/*
 * test_op_flags.c: default operation flags asked in fi_getinfo's hints, as
 * fabtests' fi_msg_inject asks FI_INJECT of tx_attr->op_flags: every send
 * then leaves its buffer to the caller at once, a send larger than
 * inject_size is refused, and a read still lands in the caller's buffer.
 */
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "bolt_attr.h"
#include "rdm_fixture.h"


static struct bolt_fixture_endpoint endpoint;
static struct rdm_options options = {
	.profile = "thunderbolt", .mr_mode = RDM_MR_MODE, .tx_op_flags = FI_INJECT,
};

static void open_self(void)
{
	char name[64];
	size_t length = sizeof(name);

	rdm_environment(&options, "op-flags");
	cr_assert_eq(rdm_open(&endpoint, &options), 0);
	cr_assert_eq(endpoint.info->tx_attr->op_flags & FI_INJECT, FI_INJECT);
	cr_assert_eq(fi_getname(&endpoint.ep->fid, name, &length), 0);
	cr_assert_eq(fi_av_insert(endpoint.av, name, 1, &endpoint.peer, 0, NULL), 1);
}

static void close_self(void)
{
	bolt_fixture_close(&endpoint);
	rdm_environment_cleanup(&options);
}

static void wait_one(void)
{
	struct fi_cq_tagged_entry entry;
	struct fi_cq_err_entry error;
	int ret = rdm_wait(&endpoint, &entry, &error);

	cr_assert_eq(ret, 0, "completion: %d, error %d", ret, error.err);
}

Test(op_flags, default_inject_returns_the_buffer_at_once)
{
	char out[256], in[256] = { 0 };
	char *large = malloc(BOLT_INJECT_SIZE + 1);

	cr_assert_not_null(large);
	open_self();
	rdm_fill(out, sizeof(out), 3);
	cr_assert_eq(fi_recv(endpoint.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, in), 0);
	cr_assert_eq(fi_send(endpoint.ep, out, sizeof(out), NULL, endpoint.peer, out), 0);
	memset(out, 0, sizeof(out));        /* FI_INJECT: the buffer is the caller's again */
	wait_one();
	wait_one();
	cr_assert(rdm_check(in, sizeof(in), 3), "the message changed with its buffer");
	cr_assert_eq(fi_send(endpoint.ep, large, BOLT_INJECT_SIZE + 1, NULL, endpoint.peer, large),
		     -FI_EMSGSIZE);
	close_self();
	free(large);
}

Test(op_flags, default_inject_leaves_reads_in_place)
{
	char region[512], local[512] = { 0 };
	struct fid_mr *mr;

	open_self();
	rdm_fill(region, sizeof(region), 4);
	cr_assert_eq(fi_mr_reg(endpoint.domain, region, sizeof(region), FI_REMOTE_READ, 0, 0, 0, &mr,
			       NULL), 0);
	cr_assert_eq(fi_mr_bind(mr, &endpoint.ep->fid, 0), 0);
	cr_assert_eq(fi_mr_enable(mr), 0);
	cr_assert_eq(fi_read(endpoint.ep, local, sizeof(local), NULL, endpoint.peer,
			     (uintptr_t) region, fi_mr_key(mr), local), 0);
	wait_one();
	cr_assert(rdm_check(local, sizeof(local), 4), "the read did not land in the caller's buffer");
	cr_assert_eq(fi_close(&mr->fid), 0);
	close_self();
}
