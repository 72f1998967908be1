/*
 * test_softrdma_limits.c: the limits of each profile, as the real devices
 * have them: thunderbolt's 100 MRs, 10 QPs, 63 outstanding WRs behind larger
 * reported capacities, UC only, frame-matched SENDs, SENDs lost without a
 * receive; rocev2's large limits and receiver-not-ready retries; the
 * config's overrides; CQ capacity.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "softrdma_test.h"

static struct softrdma_config config;
static struct test_device device;

static void open_device(enum softrdma_profile profile, const char *tag, int max_mr, int max_qp,
			int max_wr)
{
	test_config_init(&config, profile, "single", tag);
	config.max_mr = max_mr;
	config.max_qp = max_qp;
	config.max_wr = max_wr;
	cr_assert_eq(test_attach(&config), 0);
	cr_assert_eq(test_device_open(&device, 0), 0);
}

static void close_device(void)
{
	test_device_close(&device);
	softrdma_detach();
	test_segment_remove(&config);
}

/* Registers until the device refuses: how many it took, and errno of the refusal. */
static int register_until_refused(struct ibv_mr **mrs, int most, char *buffer, int *error)
{
	int count;

	for (count = 0; count < most; count++) {
		mrs[count] = softrdma_reg_mr(device.pd, buffer + count, 1, IBV_ACCESS_LOCAL_WRITE);
		if (!mrs[count]) {
			*error = errno;
			break;
		}
	}
	return count;
}

static void check_mr_limit(int expected)
{
	struct ibv_mr **mrs = calloc((size_t) expected + 1, sizeof(*mrs));
	char *buffer = malloc((size_t) expected + 1);
	int error = 0, count;

	count = register_until_refused(mrs, expected + 1, buffer, &error);
	cr_assert_eq(count, expected);
	cr_assert_eq(error, ENOMEM);
	/* Freeing one makes room for one. */
	cr_assert_eq(softrdma_dereg_mr(mrs[0]), 0);
	mrs[0] = softrdma_reg_mr(device.pd, buffer, 1, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mrs[0]);
	for (int index = 0; index < count; index++)
		cr_assert_eq(softrdma_dereg_mr(mrs[index]), 0);
	free(mrs);
	free(buffer);
}

Test(limits, thunderbolt_101st_mr_fails_with_enomem)
{
	open_device(SOFTRDMA_PROFILE_THUNDERBOLT, "mr-limit", 0, 0, 0);
	check_mr_limit(100);
	close_device();
}

Test(limits, rocev2_65537th_mr_fails_with_enomem)
{
	open_device(SOFTRDMA_PROFILE_ROCEV2, "mr-limit-roce", 0, 0, 0);
	check_mr_limit(65536);
	close_device();
}

Test(limits, config_overrides_the_mr_limit)
{
	open_device(SOFTRDMA_PROFILE_ROCEV2, "mr-override", 5, 0, 0);
	check_mr_limit(5);
	close_device();
}

static void check_qp_limit(enum ibv_qp_type type, int expected)
{
	struct ibv_qp **qps = calloc((size_t) expected, sizeof(*qps));

	for (int index = 0; index < expected; index++) {
		qps[index] = test_qp_create(device.pd, device.cq, type, 8);
		cr_assert_not_null(qps[index], "QP %d: errno %d", index, errno);
	}
	cr_assert_null(test_qp_create(device.pd, device.cq, type, 8));
	cr_assert_eq(errno, EBUSY);
	for (int index = 0; index < expected; index++)
		cr_assert_eq(softrdma_destroy_qp(qps[index]), 0);
	free(qps);
}

Test(limits, thunderbolt_11th_qp_fails_with_ebusy)
{
	open_device(SOFTRDMA_PROFILE_THUNDERBOLT, "qp-limit", 0, 0, 0);
	check_qp_limit(IBV_QPT_UC, 10);
	close_device();
}

Test(limits, rocev2_1025th_qp_fails_with_ebusy)
{
	open_device(SOFTRDMA_PROFILE_ROCEV2, "qp-limit-roce", 0, 0, 0);
	check_qp_limit(IBV_QPT_RC, 1024);
	close_device();
}

Test(limits, config_overrides_the_qp_limit)
{
	open_device(SOFTRDMA_PROFILE_ROCEV2, "qp-override", 0, 3, 0);
	check_qp_limit(IBV_QPT_RC, 3);
	close_device();
}

Test(limits, thunderbolt_offers_uc_only)
{
	open_device(SOFTRDMA_PROFILE_THUNDERBOLT, "uc-only", 0, 0, 0);
	cr_assert_null(test_qp_create(device.pd, device.cq, IBV_QPT_RC, 8));
	cr_assert_eq(errno, EOPNOTSUPP);
	cr_assert_null(test_qp_create(device.pd, device.cq, IBV_QPT_UD, 8));
	cr_assert_eq(errno, EOPNOTSUPP);
	close_device();
}

Test(limits, thunderbolt_reports_more_than_it_accepts)
{
	struct ibv_device_attr attr;
	struct ibv_qp *qp;

	open_device(SOFTRDMA_PROFILE_THUNDERBOLT, "reported", 0, 0, 0);
	cr_assert_eq(softrdma_query_device(device.context, &attr), 0);
	cr_assert_eq(attr.max_qp_wr, 8192);
	cr_assert_eq(attr.max_mr, 100);
	cr_assert_eq(attr.max_qp, 10);
	qp = test_qp_create(device.pd, device.cq, IBV_QPT_UC, 8192);
	cr_assert_not_null(qp);
	cr_assert_eq(softrdma_destroy_qp(qp), 0);
	cr_assert_null(test_qp_create(device.pd, device.cq, IBV_QPT_UC, 8193));
	cr_assert_eq(errno, EINVAL);
	close_device();
}

static void check_send_depth(struct test_loopback *loopback, int depth)
{
	struct ibv_wc wc;

	/* Signaled but not polled: outstanding until polled. */
	for (int index = 0; index < depth; index++)
		cr_assert_eq(test_post_send(loopback->qp_a, IBV_WR_SEND, loopback->mr_a, 0, 8, NULL,
					    0, 0, IBV_SEND_SIGNALED, (uint64_t) index), 0,
			     "post %d", index);
	cr_assert_eq(test_post_send(loopback->qp_a, IBV_WR_SEND, loopback->mr_a, 0, 8, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 99), ENOMEM);
	cr_assert_eq(test_poll(loopback->device.cq, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(test_post_send(loopback->qp_a, IBV_WR_SEND, loopback->mr_a, 0, 8, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 99), 0);
}

static void check_receive_depth(struct test_loopback *loopback, int depth)
{
	for (int index = 0; index < depth; index++)
		cr_assert_eq(test_post_recv(loopback->qp_b, loopback->mr_b, 0, 8, (uint64_t) index),
			     0, "receive %d", index);
	cr_assert_eq(test_post_recv(loopback->qp_b, loopback->mr_b, 0, 8, 99), ENOMEM);
}

Test(limits, thunderbolt_64th_outstanding_post_fails_with_enomem)
{
	struct test_loopback loopback;

	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "depth");
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_UC, 4096, 8192), 0);
	check_send_depth(&loopback, 63);
	check_receive_depth(&loopback, 63);
	test_loopback_close(&loopback);
}

Test(limits, unsignaled_wrs_stay_outstanding_until_a_later_completion_is_polled)
{
	struct test_loopback loopback;
	struct ibv_wc wc;

	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "unsignaled-depth");
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_UC, 4096, 16), 0);
	for (int index = 0; index < 15; index++)
		cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 8, NULL,
					    0, 0, 0, 0), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 8, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 15), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 8, NULL, 0, 0,
				    0, 0), ENOMEM);
	cr_assert_eq(test_poll(loopback.device.cq, &wc, TEST_TIMEOUT_MS), 1);
	for (int index = 0; index < 16; index++)
		cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 8, NULL,
					    0, 0, 0, 0), 0);
	test_loopback_close(&loopback);
}

Test(limits, config_overrides_the_queue_depth)
{
	struct test_loopback loopback;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "depth-override");
	config.max_wr = 5;
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_UC, 4096, 5), 0);
	check_send_depth(&loopback, 5);
	check_receive_depth(&loopback, 5);
	test_loopback_close(&loopback);
}

Test(limits, rocev2_accepts_what_it_reports)
{
	struct test_loopback loopback;
	struct ibv_device_attr attr;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "rocev2-depth");
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_RC, 4096, 1024), 0);
	cr_assert_eq(softrdma_query_device(loopback.device.context, &attr), 0);
	cr_assert_eq(attr.max_qp_wr, 1024);
	cr_assert_eq(attr.max_mr, 65536);
	cr_assert_geq(attr.max_qp, 1024);
	check_receive_depth(&loopback, 1024);
	test_loopback_close(&loopback);
}

/* A SEND of send_length into a receive of receive_length on thunderbolt UC. */
static enum ibv_wc_status receive_status_of(size_t send_length, size_t receive_length)
{
	struct test_loopback loopback;
	struct ibv_wc wc;
	enum ibv_wc_status status;

	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "frames");
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_UC, 65536, 8), 0);
	memset(loopback.buffer_b, 0, 65536);
	test_pattern_fill(loopback.buffer_a, send_length, 9);
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, receive_length, 1), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, send_length,
				    NULL, 0, 0, IBV_SEND_SIGNALED, 1), 0);
	cr_assert_eq(test_poll(loopback.device.cq, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "a UC sender sees no error");
	cr_assert_eq(test_poll(loopback.cq_b, &wc, TEST_TIMEOUT_MS), 1);
	status = wc.status;
	if (status == IBV_WC_SUCCESS)
		cr_assert(test_pattern_check(loopback.buffer_b, send_length, 9));
	else
		cr_assert_eq(loopback.buffer_b[0], 0, "data delivered despite the error");
	test_loopback_close(&loopback);
	return status;
}

Test(limits, thunderbolt_send_and_receive_must_span_as_many_frames)
{
	cr_assert_eq(receive_status_of(100, 4096), IBV_WC_SUCCESS);
	cr_assert_eq(receive_status_of(5000, 8192), IBV_WC_SUCCESS);
	cr_assert_eq(receive_status_of(4096, 4096), IBV_WC_SUCCESS);
	cr_assert_eq(receive_status_of(100, 8192), IBV_WC_LOC_LEN_ERR);
	cr_assert_eq(receive_status_of(4097, 12288), IBV_WC_LOC_LEN_ERR);
}

Test(limits, thunderbolt_send_without_receive_is_lost)
{
	struct test_loopback loopback;
	struct ibv_wc wc;

	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "lost");
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_UC, 4096, 8), 0);
	test_pattern_fill(loopback.buffer_a, 64, 1);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 64, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 1), 0);
	cr_assert_eq(test_poll(loopback.device.cq, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 64, 1), 0);
	cr_assert_eq(test_poll(loopback.cq_b, &wc, 50), 0, "a lost SEND arrived");
	test_loopback_close(&loopback);
}

static void check_rnr_exceeded(int rnr_retry)
{
	struct test_loopback loopback;
	struct ibv_qp_attr attr = { .rnr_retry = (uint8_t) rnr_retry };
	struct ibv_wc wc;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "rnr");
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_RC, 4096, 8), 0);
	/* RTS -> RTS cannot change rnr_retry: start again from RESET. */
	attr.qp_state = IBV_QPS_RESET;
	cr_assert_eq(softrdma_modify_qp(loopback.qp_a, &attr, IBV_QP_STATE), 0);
	cr_assert_eq(test_qp_init(loopback.qp_a, TEST_ACCESS_ALL), 0);
	cr_assert_eq(test_qp_rtr(loopback.qp_a, &loopback.address_b, TEST_GID_INDEX, IBV_MTU_1024),
		     0);
	cr_assert_eq(test_qp_rts(loopback.qp_a, TEST_RC_TIMEOUT, rnr_retry), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 64, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 1), 0);
	cr_assert_eq(test_poll(loopback.device.cq, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, IBV_WC_RNR_RETRY_EXC_ERR, "%s", softrdma_wc_status_str(wc.status));
	test_loopback_close(&loopback);
}

Test(limits, rocev2_rc_receiver_not_ready_retry_exceeded)
{
	check_rnr_exceeded(0);
	check_rnr_exceeded(3);
}

/*
 * A SEND waiting to be retried (the receiver had no receive, its RNR timer
 * 655 ms) is flushed as soon as its QP enters ERR, as a real QP flushes.
 */
Test(limits, rocev2_error_flushes_a_send_waiting_for_the_receiver)
{
	struct test_loopback loopback;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RTS, .min_rnr_timer = 0 };
	struct ibv_wc wc;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "flush");
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_RC, 4096, 8), 0);
	cr_assert_eq(softrdma_modify_qp(loopback.qp_b, &attr, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 64, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 1), 0);
	cr_assert_eq(test_poll(loopback.device.cq, &wc, 20), 0, "the SEND found no receive");
	attr.qp_state = IBV_QPS_ERR;
	cr_assert_eq(softrdma_modify_qp(loopback.qp_a, &attr, IBV_QP_STATE), 0);
	cr_assert_eq(test_poll(loopback.device.cq, &wc, 200), 1, "no flush within 200 ms");
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR, "%s", softrdma_wc_status_str(wc.status));
	test_loopback_close(&loopback);
}

/*
 * A zero-length RDMA write needs no valid address or rkey (IB C9-88, as rxe
 * has it): with immediate data it delivers just that, on RC and UC.
 */
static void check_zero_length_write_with_immediate(enum ibv_qp_type type)
{
	struct test_loopback loopback;
	struct test_address nowhere = { 0 };
	struct ibv_wc wc;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "zero");
	cr_assert_eq(test_loopback_open(&loopback, &config, type, 4096, 8), 0);
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 64, 2), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_RDMA_WRITE_WITH_IMM, NULL, 0, 0, &nowhere, 0,
				    0xfeed, IBV_SEND_SIGNALED, 1), 0);
	cr_assert_eq(test_poll(loopback.device.cq, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", softrdma_wc_status_str(wc.status));
	cr_assert_eq(test_poll(loopback.cq_b, &wc, TEST_TIMEOUT_MS), 1, "the immediate never arrived");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc.imm_data, 0xfeed);
	cr_assert_eq(wc.byte_len, 0);
	test_loopback_close(&loopback);
}

Test(limits, rocev2_zero_length_write_needs_no_key)
{
	check_zero_length_write_with_immediate(IBV_QPT_RC);
	check_zero_length_write_with_immediate(IBV_QPT_UC);
}

Test(limits, rocev2_uc_send_without_receive_is_lost)
{
	struct test_loopback loopback;
	struct ibv_wc wc;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "uc-lost");
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_UC, 4096, 8), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 64, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 1), 0);
	cr_assert_eq(test_poll(loopback.device.cq, &wc, TEST_TIMEOUT_MS), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	test_loopback_close(&loopback);
}

/*
 * A loopback pair (namespace tag) and a UC QP of its first device whose
 * completions go to a new CQ of two entries.
 */
static struct ibv_qp *small_cq_qp(struct test_loopback *loopback, const char *tag,
				  struct ibv_cq **small)
{
	struct ibv_qp *qp;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", tag);
	cr_assert_eq(test_loopback_open(loopback, &config, IBV_QPT_UC, 4096, 8), 0);
	*small = softrdma_create_cq(loopback->device.context, 2, NULL, NULL, 0);
	cr_assert_not_null(*small);
	qp = test_qp_create(loopback->device.pd, *small, IBV_QPT_UC, 8);
	cr_assert_not_null(qp);
	cr_assert_eq(test_qp_connect(qp, &loopback->address_b, 7), 0);
	return qp;
}

/*
 * A CQ filled to its capacity, polled empty, and filled again, several
 * times: producers look at what the consumer took only when the CQ seems
 * full, and must see that it took it.
 */
Test(limits, cq_filled_again_after_polling)
{
	struct test_loopback loopback;
	struct ibv_cq *small;
	struct ibv_qp *qp;
	struct ibv_wc wc[4];

	qp = small_cq_qp(&loopback, "cq-again", &small);
	for (int round = 0; round < 4; round++) {
		for (int index = 0; index < 2; index++)
			cr_assert_eq(test_post_send(qp, IBV_WR_SEND, loopback.mr_a, 0, 8, NULL, 0, 0,
						    IBV_SEND_SIGNALED, (uint64_t) index), 0);
		cr_assert_eq(softrdma_poll_cq(small, 4, wc), 2, "round %d", round);
		cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
		cr_assert_eq(wc[1].status, IBV_WC_SUCCESS);
	}
	cr_assert_eq(softrdma_poll_cq(small, 4, wc), 0);
	cr_assert_eq(softrdma_destroy_qp(qp), 0);
	cr_assert_eq(softrdma_destroy_cq(small), 0);
	test_loopback_close(&loopback);
}

Test(limits, cq_capacity_and_overrun)
{
	struct test_loopback loopback;
	struct ibv_cq *small;
	struct ibv_qp *qp;
	struct ibv_wc wc[4];

	qp = small_cq_qp(&loopback, "cq", &small);
	cr_assert_null(softrdma_create_cq(loopback.device.context, 4097, NULL, NULL, 0));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(softrdma_create_cq(loopback.device.context, 0, NULL, NULL, 0));
	for (int index = 0; index < 3; index++)
		cr_assert_eq(test_post_send(qp, IBV_WR_SEND, loopback.mr_a, 0, 8, NULL, 0, 0,
					    IBV_SEND_SIGNALED, (uint64_t) index), 0);
	cr_assert_eq(softrdma_poll_cq(small, 4, wc), 2);
	cr_assert_eq(softrdma_poll_cq(small, 4, wc), -EOVERFLOW);
	cr_assert_eq(softrdma_destroy_cq(small), EBUSY);
	cr_assert_eq(softrdma_destroy_qp(qp), 0);
	cr_assert_eq(softrdma_destroy_cq(small), 0);
	test_loopback_close(&loopback);
}
