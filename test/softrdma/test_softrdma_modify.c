/*
 * test_softrdma_modify.c: the QP state machine as real verbs enforce it:
 * the attributes each transition requires and allows, the transitions that
 * do not exist, the path checks of RTR (seed 000: a destination GID of no
 * device is EINVAL), and what query_qp gives back.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "softrdma_test.h"

static struct softrdma_config config;
static struct test_device device;
static struct ibv_qp *qp;
static struct test_address self;

static void open_qp(enum softrdma_profile profile, enum ibv_qp_type type, const char *tag)
{
	test_config_init(&config, profile, "single", tag);
	cr_assert_eq(softrdma_attach(&config), 0);
	cr_assert_eq(test_device_open(&device, 0), 0);
	qp = test_qp_create(device.pd, device.cq, type, 8);
	cr_assert_not_null(qp);
	cr_assert_eq(test_address_of(&device, qp, NULL, &self), 0);
}

static void close_qp(void)
{
	cr_assert_eq(softrdma_destroy_qp(qp), 0);
	test_device_close(&device);
	softrdma_detach();
	test_segment_remove(&config);
}

static int modify_state(enum ibv_qp_state state, int extra_mask)
{
	struct ibv_qp_attr attr = {
		.qp_state = state, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
		.path_mtu = IBV_MTU_1024, .dest_qp_num = self.qpn,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = self.gid, .sgid_index = 1 } },
	};

	return softrdma_modify_qp(qp, &attr, IBV_QP_STATE | extra_mask);
}

#define INIT_MASK (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define RTR_UC_MASK (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)

Test(modify, full_path_updates_state)
{
	open_qp(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "path");
	cr_assert_eq(test_qp_connect(qp, &self, 7), 0);
	cr_assert_eq(qp->state, IBV_QPS_RTS);
	cr_assert_eq(modify_state(IBV_QPS_ERR, 0), 0);
	cr_assert_eq(qp->state, IBV_QPS_ERR);
	cr_assert_eq(modify_state(IBV_QPS_RESET, 0), 0);
	cr_assert_eq(test_qp_connect(qp, &self, 7), 0);
	close_qp();
}

Test(modify, transitions_that_do_not_exist)
{
	open_qp(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_UC, "skip");
	cr_assert_eq(modify_state(IBV_QPS_RTR, RTR_UC_MASK), EINVAL);
	cr_assert_eq(modify_state(IBV_QPS_RTS, IBV_QP_SQ_PSN), EINVAL);
	cr_assert_eq(modify_state(IBV_QPS_SQD, 0), EINVAL);
	cr_assert_eq(modify_state(IBV_QPS_INIT, INIT_MASK), 0);
	cr_assert_eq(modify_state(IBV_QPS_RTS, IBV_QP_SQ_PSN), EINVAL);
	cr_assert_eq(modify_state(IBV_QPS_RESET, 0), 0);
	close_qp();
}

Test(modify, missing_and_extra_attributes)
{
	open_qp(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "masks");
	cr_assert_eq(modify_state(IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
	cr_assert_eq(modify_state(IBV_QPS_INIT, INIT_MASK | IBV_QP_PATH_MTU), EINVAL);
	cr_assert_eq(modify_state(IBV_QPS_INIT, INIT_MASK), 0);
	/* RC needs MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER at RTR, UC does not. */
	cr_assert_eq(modify_state(IBV_QPS_RTR, RTR_UC_MASK), EINVAL);
	cr_assert_eq(modify_state(IBV_QPS_RTR, RTR_UC_MASK | IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER), 0);
	cr_assert_eq(modify_state(IBV_QPS_RTS, IBV_QP_SQ_PSN), EINVAL);
	cr_assert_eq(test_qp_rts(qp, TEST_RC_TIMEOUT, 7), 0);
	cr_assert_eq(modify_state(IBV_QPS_RTS, IBV_QP_MIN_RNR_TIMER), 0);
	cr_assert_eq(modify_state(IBV_QPS_RTS, IBV_QP_RNR_RETRY), EINVAL);
	close_qp();
}

Test(modify, uc_refuses_rc_attributes)
{
	open_qp(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "uc-masks");
	cr_assert_eq(modify_state(IBV_QPS_INIT, INIT_MASK), 0);
	cr_assert_eq(modify_state(IBV_QPS_RTR, RTR_UC_MASK | IBV_QP_MIN_RNR_TIMER), EINVAL);
	cr_assert_eq(modify_state(IBV_QPS_RTR, RTR_UC_MASK), 0);
	cr_assert_eq(modify_state(IBV_QPS_RTS, IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT), EINVAL);
	cr_assert_eq(modify_state(IBV_QPS_RTS, IBV_QP_SQ_PSN), 0);
	close_qp();
}

static int rtr_with(const union ibv_gid *dgid, int sgid_index, int is_global, enum ibv_mtu mtu)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = mtu, .dest_qp_num = self.qpn,
		.ah_attr = { .is_global = (uint8_t) is_global, .port_num = 1,
			     .grh = { .dgid = *dgid, .sgid_index = (uint8_t) sgid_index } },
	};

	return softrdma_modify_qp(qp, &attr, IBV_QP_STATE | RTR_UC_MASK);
}

Test(modify, rtr_to_a_gid_of_no_device_is_einval)
{
	union ibv_gid zero = { 0 }, garbage;

	open_qp(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "seed-000");
	memset(garbage.raw, 0xa5, sizeof(garbage.raw));
	cr_assert_eq(modify_state(IBV_QPS_INIT, INIT_MASK), 0);
	cr_assert_eq(rtr_with(&zero, 1, 1, IBV_MTU_1024), EINVAL);
	cr_assert_eq(rtr_with(&garbage, 1, 1, IBV_MTU_1024), EINVAL);
	cr_assert_eq(qp->state, IBV_QPS_INIT);
	cr_assert_eq(rtr_with(&self.gid, 1, 1, IBV_MTU_1024), 0);
	close_qp();
}

Test(modify, rtr_path_checks)
{
	open_qp(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "rtr-checks");
	cr_assert_eq(modify_state(IBV_QPS_INIT, INIT_MASK), 0);
	/* GID index 2 is an empty entry of Thunderbolt's table, 4 is past its end. */
	cr_assert_eq(rtr_with(&self.gid, 2, 1, IBV_MTU_1024), ENODATA);
	cr_assert_eq(rtr_with(&self.gid, 4, 1, IBV_MTU_1024), EINVAL);
	cr_assert_eq(rtr_with(&self.gid, 1, 0, IBV_MTU_1024), EINVAL);
	cr_assert_eq(rtr_with(&self.gid, 1, 1, IBV_MTU_4096), EINVAL);
	cr_assert_eq(rtr_with(&self.gid, 0, 1, IBV_MTU_1024), 0);
	close_qp();
}

Test(modify, rocev2_ipv4_mapped_gid_is_a_destination)
{
	union ibv_gid mapped;

	open_qp(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_UC, "mapped");
	cr_assert_eq(softrdma_query_gid(device.context, 1, 1, &mapped), 0);
	cr_assert_eq(modify_state(IBV_QPS_INIT, INIT_MASK), 0);
	/* 4096: above the active MTU (1024), within the port's max_mtu, as rxe takes it. */
	cr_assert_eq(rtr_with(&mapped, 1, 1, IBV_MTU_4096), 0);
	close_qp();
}

Test(modify, value_checks)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 2 };

	open_qp(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_UC, "values");
	cr_assert_eq(softrdma_modify_qp(qp, &attr, IBV_QP_STATE | INIT_MASK), EINVAL);
	attr.port_num = 1;
	attr.pkey_index = 3;
	cr_assert_eq(softrdma_modify_qp(qp, &attr, IBV_QP_STATE | INIT_MASK), EINVAL);
	attr.pkey_index = 0;
	attr.qp_access_flags = IBV_ACCESS_MW_BIND;
	cr_assert_eq(softrdma_modify_qp(qp, &attr, IBV_QP_STATE | INIT_MASK), EINVAL);
	attr.qp_access_flags = 0;
	cr_assert_eq(softrdma_modify_qp(qp, &attr, IBV_QP_STATE | INIT_MASK), 0);
	attr.cur_qp_state = IBV_QPS_RTS;
	attr.qp_state = IBV_QPS_INIT;
	cr_assert_eq(softrdma_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
	close_qp();
}

Test(modify, any_state_to_error_and_reset)
{
	open_qp(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_UC, "error");
	cr_assert_eq(modify_state(IBV_QPS_ERR, 0), 0);
	cr_assert_eq(modify_state(IBV_QPS_INIT, INIT_MASK), EINVAL);
	cr_assert_eq(modify_state(IBV_QPS_RESET, 0), 0);
	cr_assert_eq(modify_state(IBV_QPS_INIT, INIT_MASK), 0);
	cr_assert_eq(modify_state(IBV_QPS_ERR, IBV_QP_PORT), EINVAL);
	cr_assert_eq(modify_state(IBV_QPS_ERR, 0), 0);
	close_qp();
}

Test(modify, query_returns_what_was_set)
{
	struct ibv_qp_init_attr init_attr;
	struct ibv_qp_attr attr;

	open_qp(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "query");
	cr_assert_eq(test_qp_connect(qp, &self, 5), 0);
	cr_assert_eq(softrdma_query_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_RNR_RETRY,
				       &init_attr), 0);
	cr_assert_eq(attr.qp_state, IBV_QPS_RTS);
	cr_assert_eq(attr.dest_qp_num, self.qpn);
	cr_assert_eq(attr.rnr_retry, 5);
	cr_assert_eq(attr.path_mtu, IBV_MTU_1024);
	cr_assert_eq(attr.ah_attr.grh.sgid_index, 1);
	cr_assert_eq(memcmp(attr.ah_attr.grh.dgid.raw, self.gid.raw, 16), 0);
	cr_assert_eq(attr.qp_access_flags,
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	close_qp();
}
