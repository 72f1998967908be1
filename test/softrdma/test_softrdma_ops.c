/*
 * test_softrdma_ops.c: each operation between two QPs of one process
 * (loopback): SEND, SEND_WITH_IMM, RDMA WRITE, WRITE_WITH_IMM, READ, inline
 * data, signaling, completion fields and order, key and access checks, the
 * error state and its flushes, receiver-not-ready retries.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "softrdma/softrdma_internal.h"
#include "softrdma_test.h"

#define BUFFER_SIZE (64 * 1024)

static struct test_loopback loopback;

static void open_loopback(enum softrdma_profile profile, enum ibv_qp_type type, const char *tag)
{
	struct softrdma_config config;

	test_config_init(&config, profile, "single", tag);
	cr_assert_eq(test_loopback_open(&loopback, &config, type, BUFFER_SIZE, 32), 0);
}

static void close_loopback(void)
{
	test_loopback_close(&loopback);
}

/* The next completion of cq, which must come. */
static struct ibv_wc expect_completion(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	cr_assert_eq(test_poll(cq, &wc, TEST_TIMEOUT_MS), 1, "no completion");
	return wc;
}

static void expect_no_completion(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	cr_assert_eq(test_poll(cq, &wc, 20), 0, "unexpected completion, status %s",
		     softrdma_wc_status_str(wc.status));
}

static void expect_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init_attr;

	cr_assert_eq(softrdma_query_qp(qp, &attr, IBV_QP_STATE, &init_attr), 0);
	cr_assert_eq(attr.qp_state, state, "state %d, not %d", attr.qp_state, state);
}

static void send_and_check(enum ibv_wr_opcode opcode, uint32_t imm)
{
	struct ibv_wc wc;

	test_pattern_fill(loopback.buffer_a, 100, 7);
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 256, 42), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, opcode, loopback.mr_a, 0, 100, NULL, 0, imm,
				    IBV_SEND_SIGNALED, 9), 0);
	wc = expect_completion(loopback.cq_b);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", softrdma_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 42);
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.byte_len, 100);
	cr_assert_eq(wc.qp_num, loopback.qp_b->qp_num);
	cr_assert_eq(wc.src_qp, loopback.qp_a->qp_num);
	cr_assert_eq(!!(wc.wc_flags & IBV_WC_WITH_IMM), opcode == IBV_WR_SEND_WITH_IMM);
	if (opcode == IBV_WR_SEND_WITH_IMM)
		cr_assert_eq(wc.imm_data, imm);
	cr_assert(test_pattern_check(loopback.buffer_b, 100, 7));
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 9);
	cr_assert_eq(wc.opcode, IBV_WC_SEND);
	cr_assert_eq(wc.qp_num, loopback.qp_a->qp_num);
}

Test(ops, send_rc)
{
	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "send-rc");
	send_and_check(IBV_WR_SEND, 0);
	close_loopback();
}

Test(ops, send_with_imm_uc_thunderbolt)
{
	open_loopback(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "send-imm");
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 256, 1), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 100, NULL, 0,
				    0, 0, 0), 0);
	expect_completion(loopback.cq_b);
	send_and_check(IBV_WR_SEND_WITH_IMM, htonl(0xdeadbeef));
	close_loopback();
}

Test(ops, write)
{
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "write");
	test_pattern_fill(loopback.buffer_a, 5000, 3);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_RDMA_WRITE, loopback.mr_a, 0, 5000,
				    &loopback.address_b, 100, 0, IBV_SEND_SIGNALED, 5), 0);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_WRITE);
	cr_assert_eq(wc.wr_id, 5);
	cr_assert(test_pattern_check(loopback.buffer_b + 100, 5000, 3));
	expect_no_completion(loopback.cq_b);
	close_loopback();
}

Test(ops, write_with_imm_consumes_a_receive)
{
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "write-imm");
	memset(loopback.buffer_b + 8192, 0x5a, 16);
	test_pattern_fill(loopback.buffer_a, 3000, 4);
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 8192, 16, 77), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_RDMA_WRITE_WITH_IMM, loopback.mr_a, 0,
				    3000, &loopback.address_b, 0, htonl(1234), IBV_SEND_SIGNALED,
				    6), 0);
	wc = expect_completion(loopback.cq_b);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc.wr_id, 77);
	cr_assert_eq(wc.imm_data, htonl(1234));
	cr_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(wc.byte_len, 3000);
	cr_assert(test_pattern_check(loopback.buffer_b, 3000, 4));
	for (int index = 0; index < 16; index++)
		cr_assert_eq((unsigned char) loopback.buffer_b[8192 + index], 0x5a);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_WRITE);
	close_loopback();
}

Test(ops, read)
{
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "read");
	test_pattern_fill(loopback.buffer_b + 10, 7000, 8);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_RDMA_READ, loopback.mr_a, 1, 7000,
				    &loopback.address_b, 10, 0, IBV_SEND_SIGNALED, 11), 0);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_READ);
	cr_assert_eq(wc.byte_len, 7000);
	cr_assert(test_pattern_check(loopback.buffer_a + 1, 7000, 8));
	close_loopback();
}

Test(ops, read_on_uc_is_einval)
{
	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_UC, "read-uc");
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_RDMA_READ, loopback.mr_a, 0, 8,
				    &loopback.address_b, 0, 0, IBV_SEND_SIGNALED, 0), EINVAL);
	close_loopback();
}

Test(ops, unsupported_opcode_is_einval)
{
	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "atomic");
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_ATOMIC_FETCH_AND_ADD, loopback.mr_a, 0,
				    8, &loopback.address_b, 0, 0, 0, 0), EINVAL);
	close_loopback();
}

Test(ops, inline_data_is_copied_at_post)
{
	char message[40] = "inline, no key needed";
	struct ibv_sge sge = { .addr = (uintptr_t) message, .length = sizeof(message), .lkey = 0 };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
	}, *bad_wr;
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "inline");
	cr_assert_eq(softrdma_post_send(loopback.qp_a, &wr, &bad_wr), 0);
	memset(message, 0, sizeof(message));
	/* RC waits for the receive, with the bytes taken at post time. */
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 64, 1), 0);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	wc = expect_completion(loopback.cq_b);
	cr_assert_eq(wc.byte_len, 40);
	cr_assert_str_eq(loopback.buffer_b, "inline, no key needed");
	close_loopback();
}

Test(ops, inline_beyond_capacity_is_einval)
{
	char message[65] = { 0 };
	struct ibv_sge sge = { .addr = (uintptr_t) message, .length = sizeof(message) };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE,
	}, *bad_wr = NULL;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "inline-big");
	cr_assert_eq(softrdma_post_send(loopback.qp_a, &wr, &bad_wr), EINVAL);
	cr_assert_eq(bad_wr, &wr);
	close_loopback();
}

Test(ops, unsignaled_sends_complete_silently)
{
	open_loopback(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "unsignaled");
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 64, 1), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 64, NULL, 0, 0,
				    0, 1), 0);
	expect_completion(loopback.cq_b);
	expect_no_completion(loopback.device.cq);
	close_loopback();
}

Test(ops, completions_in_order_and_chained_wrs)
{
	struct ibv_sge sge[8];
	struct ibv_send_wr wr[8], *bad_wr;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_UC, "order");
	for (int index = 0; index < 8; index++) {
		cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, (size_t) index * 64, 64,
					    100 + (uint64_t) index), 0);
		sge[index] = (struct ibv_sge) { (uintptr_t) loopback.buffer_a + (size_t) index,
						(uint32_t) index + 1, loopback.mr_a->lkey };
		wr[index] = (struct ibv_send_wr) {
			.wr_id = (uint64_t) index, .next = index < 7 ? &wr[index + 1] : NULL,
			.sg_list = &sge[index], .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
		};
	}
	cr_assert_eq(softrdma_post_send(loopback.qp_a, wr, &bad_wr), 0);
	for (int index = 0; index < 8; index++) {
		struct ibv_wc receive = expect_completion(loopback.cq_b);
		struct ibv_wc send = expect_completion(loopback.device.cq);

		cr_assert_eq(receive.wr_id, 100 + (uint64_t) index);
		cr_assert_eq(receive.byte_len, (uint32_t) index + 1);
		cr_assert_eq(send.wr_id, (uint64_t) index);
	}
	close_loopback();
}

/*
 * 3 * piece bytes gathered from three pieces (piece, 1.5 piece, piece / 2),
 * scattered into piece + 5 * piece. A small message rides in its receive
 * completion and is placed by the target's poll; a larger one is copied.
 */
static void check_scatter_gather(const char *tag, uint32_t piece)
{
	struct ibv_sge send_sge[3];
	struct ibv_sge receive_sge[2];
	struct ibv_send_wr wr = { .sg_list = send_sge, .num_sge = 3, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad_send;
	struct ibv_recv_wr receive = { .sg_list = receive_sge, .num_sge = 2 }, *bad_receive;
	uint32_t lkey_a, lkey_b;
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, tag);
	lkey_a = loopback.mr_a->lkey;
	lkey_b = loopback.mr_b->lkey;
	test_pattern_fill(loopback.buffer_a, 3 * piece, 5);
	send_sge[0] = (struct ibv_sge) { (uintptr_t) loopback.buffer_a, piece, lkey_a };
	send_sge[1] = (struct ibv_sge) { (uintptr_t) loopback.buffer_a + piece, piece * 3 / 2,
					 lkey_a };
	send_sge[2] = (struct ibv_sge) { (uintptr_t) loopback.buffer_a + piece * 5 / 2, piece / 2,
					 lkey_a };
	receive_sge[0] = (struct ibv_sge) { (uintptr_t) loopback.buffer_b + 20000, piece, lkey_b };
	receive_sge[1] = (struct ibv_sge) { (uintptr_t) loopback.buffer_b + 40000, 5 * piece,
					    lkey_b };
	cr_assert_eq(softrdma_post_recv(loopback.qp_b, &receive, &bad_receive), 0);
	cr_assert_eq(softrdma_post_send(loopback.qp_a, &wr, &bad_send), 0);
	wc = expect_completion(loopback.cq_b);
	cr_assert_eq(wc.byte_len, 3 * piece);
	cr_assert(test_pattern_check(loopback.buffer_b + 20000, piece, 5));
	cr_assert_eq(memcmp(loopback.buffer_b + 40000, loopback.buffer_a + piece, 2 * piece), 0);
	close_loopback();
}

Test(ops, scatter_gather_lists)
{
	check_scatter_gather("sgl", SOFTRDMA_COMPLETION_PAYLOAD / 2);
}

Test(ops, scatter_gather_lists_of_a_message_its_completion_carries)
{
	check_scatter_gather("sgl-small", SOFTRDMA_COMPLETION_PAYLOAD / 4);
}

/*
 * More small messages than the target's CQ has payload slots, none polled
 * yet: the slots all fill and the rest are copied, none over a payload not
 * yet placed. Every message arrives intact and in order.
 */
Test(ops, small_messages_past_the_payload_slots_are_copied)
{
	enum { MESSAGES = SOFTRDMA_PAYLOAD_SLOTS + 64, LENGTH = 1000 };
	struct softrdma_config config;
	struct ibv_wc wc;

	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "payload-slots");
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_RC, MESSAGES * LENGTH, MESSAGES),
		     0);
	for (int index = 0; index < MESSAGES; index++) {
		test_pattern_fill(loopback.buffer_a + index * LENGTH, LENGTH, (uint32_t) index);
		cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, index * LENGTH, LENGTH,
					    (uint64_t) index), 0);
	}
	for (int index = 0; index < MESSAGES; index++)
		cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, index * LENGTH,
					    LENGTH, NULL, 0, 0,
					    index == MESSAGES - 1 ? IBV_SEND_SIGNALED : 0,
					    (uint64_t) index), 0);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", softrdma_wc_status_str(wc.status));
	for (int index = 0; index < MESSAGES; index++) {
		wc = expect_completion(loopback.cq_b);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", softrdma_wc_status_str(wc.status));
		cr_assert_eq(wc.wr_id, (uint64_t) index);
		cr_assert_eq(wc.byte_len, LENGTH);
		cr_assert(test_pattern_check(loopback.buffer_b + index * LENGTH, LENGTH,
					     (uint32_t) index), "message %d", index);
	}
	close_loopback();
}

Test(ops, bad_lkey_is_a_local_protection_error_then_flush)
{
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "lkey");
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 64, 1), 0);
	/* Past the end of the MR. */
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, BUFFER_SIZE - 8, 64,
				    NULL, 0, 0, 0, 1), 0);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.status, IBV_WC_LOC_PROT_ERR, "%s", softrdma_wc_status_str(wc.status));
	expect_state(loopback.qp_a, IBV_QPS_ERR);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 8, NULL, 0, 0,
				    0, 2), 0);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc.wr_id, 2);
	close_loopback();
}

static void remote_violation(enum ibv_qp_type type, size_t remote_offset, uint32_t rkey_change)
{
	struct test_address target = loopback.address_b;
	struct ibv_wc wc;

	target.rkey ^= rkey_change;
	test_pattern_fill(loopback.buffer_a, 128, 1);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_RDMA_WRITE, loopback.mr_a, 0, 128,
				    &target, remote_offset, 0, IBV_SEND_SIGNALED, 1), 0);
	wc = expect_completion(loopback.device.cq);
	if (type == IBV_QPT_RC) {
		cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR, "%s",
			     softrdma_wc_status_str(wc.status));
		expect_state(loopback.qp_a, IBV_QPS_ERR);
	} else {
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		expect_state(loopback.qp_a, IBV_QPS_RTS);
	}
	cr_assert_eq(loopback.buffer_b[remote_offset < BUFFER_SIZE ? remote_offset : 0], 0);
}

Test(ops, bad_rkey_rc_is_remote_access_error)
{
	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "rkey-rc");
	remote_violation(IBV_QPT_RC, 0, 0x40000);
	close_loopback();
}

Test(ops, out_of_bounds_rkey_rc_is_remote_access_error)
{
	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "bounds-rc");
	remote_violation(IBV_QPT_RC, BUFFER_SIZE - 64, 0);
	close_loopback();
}

Test(ops, bad_rkey_uc_is_dropped_silently)
{
	open_loopback(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "rkey-uc");
	remote_violation(IBV_QPT_UC, 0, 0x40000);
	close_loopback();
}

Test(ops, rkey_without_remote_write_right)
{
	struct ibv_mr *read_only;
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "rights");
	read_only = softrdma_reg_mr(loopback.device.pd, loopback.buffer_b, 4096,
				    IBV_ACCESS_REMOTE_READ);
	cr_assert_not_null(read_only);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_RDMA_WRITE, loopback.mr_a, 0, 16,
				    &(struct test_address) { .addr = (uintptr_t) loopback.buffer_b,
							     .rkey = read_only->rkey },
				    0, 0, IBV_SEND_SIGNALED, 1), 0);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(softrdma_dereg_mr(read_only), 0);
	close_loopback();
}

Test(ops, receive_too_short)
{
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "short");
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 50, 1), 0);
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 100, 50, 2), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 100, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 1), 0);
	/* As rxe answers it (a malformed WQE), not as the IB spec: test/rxe checks rxe. */
	wc = expect_completion(loopback.cq_b);
	cr_assert_eq(wc.status, IBV_WC_LOC_QP_OP_ERR);
	cr_assert_eq(wc.wr_id, 1);
	/* The receiver went to ERR: its other receive is flushed. */
	wc = expect_completion(loopback.cq_b);
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc.wr_id, 2);
	expect_state(loopback.qp_b, IBV_QPS_ERR);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.status, IBV_WC_REM_OP_ERR);
	close_loopback();
}

Test(ops, post_send_needs_rts_and_post_recv_init)
{
	struct test_device *device;
	struct ibv_qp *qp;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "states");
	device = &loopback.device;
	qp = test_qp_create(device->pd, device->cq, IBV_QPT_RC, 8);
	cr_assert_not_null(qp);
	cr_assert_eq(test_post_recv(qp, loopback.mr_a, 0, 8, 1), EINVAL);
	cr_assert_eq(test_qp_init(qp, TEST_ACCESS_ALL), 0);
	cr_assert_eq(test_post_recv(qp, loopback.mr_a, 0, 8, 1), 0);
	cr_assert_eq(test_post_send(qp, IBV_WR_SEND, loopback.mr_a, 0, 8, NULL, 0, 0, 0, 1),
		     EINVAL);
	cr_assert_eq(test_qp_rtr(qp, &loopback.address_b, TEST_GID_INDEX, IBV_MTU_1024),
		     0);
	cr_assert_eq(test_post_send(qp, IBV_WR_SEND, loopback.mr_a, 0, 8, NULL, 0, 0, 0, 1),
		     EINVAL);
	cr_assert_eq(softrdma_destroy_qp(qp), 0);
	close_loopback();
}

Test(ops, modify_to_error_flushes_receives)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_THUNDERBOLT, IBV_QPT_UC, "flush");
	for (uint64_t index = 0; index < 3; index++)
		cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 64, index), 0);
	cr_assert_eq(softrdma_modify_qp(loopback.qp_b, &attr, IBV_QP_STATE), 0);
	for (uint64_t index = 0; index < 3; index++) {
		wc = expect_completion(loopback.cq_b);
		cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
		cr_assert_eq(wc.wr_id, index);
	}
	/* Receives posted in ERR complete at once, flushed. */
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 64, 9), 0);
	wc = expect_completion(loopback.cq_b);
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	close_loopback();
}

Test(ops, receiver_not_ready_retried_until_a_receive_comes)
{
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "rnr-forever");
	test_pattern_fill(loopback.buffer_a, 512, 2);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 512, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 1), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_RDMA_WRITE, loopback.mr_a, 0, 4,
				    &loopback.address_b, 4096, 0, IBV_SEND_SIGNALED, 2), 0);
	expect_no_completion(loopback.device.cq);
	/* The write waits behind the send: order is kept. */
	cr_assert_eq(loopback.buffer_b[4096], 0);
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 512, 1), 0);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 1);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.wr_id, 2);
	/* The receiver reads its data once it has the receive's completion. */
	wc = expect_completion(loopback.cq_b);
	cr_assert_eq(wc.wr_id, 1);
	cr_assert(test_pattern_check(loopback.buffer_b, 512, 2));
	close_loopback();
}

Test(ops, rc_retries_until_the_target_is_ready)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "late-rtr");
	cr_assert_eq(softrdma_modify_qp(loopback.qp_b, &reset, IBV_QP_STATE), 0);
	cr_assert_eq(test_qp_init(loopback.qp_b, TEST_ACCESS_ALL), 0);
	cr_assert_eq(test_post_recv(loopback.qp_b, loopback.mr_b, 0, 64, 1), 0);
	/* B cannot receive yet: A's SEND goes unanswered and is retried. */
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_SEND, loopback.mr_a, 0, 64, NULL, 0, 0,
				    IBV_SEND_SIGNALED, 1), 0);
	expect_no_completion(loopback.device.cq);
	cr_assert_eq(test_qp_rtr(loopback.qp_b, &loopback.address_a, TEST_GID_INDEX, IBV_MTU_1024),
		     0);
	wc = expect_completion(loopback.device.cq);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", softrdma_wc_status_str(wc.status));
	wc = expect_completion(loopback.cq_b);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	close_loopback();
}

Test(ops, inline_verbs_functions_reach_the_device)
{
	struct ibv_sge sge;
	struct ibv_recv_wr receive = { .sg_list = &sge, .num_sge = 1 }, *bad_receive;
	struct ibv_send_wr send = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				    .send_flags = IBV_SEND_SIGNALED }, *bad_send;
	struct ibv_wc wc;

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_UC, "inline-verbs");
	sge = (struct ibv_sge) { (uintptr_t) loopback.buffer_b, 8, loopback.mr_b->lkey };
	cr_assert_eq(ibv_post_recv(loopback.qp_b, &receive, &bad_receive), 0);
	sge = (struct ibv_sge) { (uintptr_t) loopback.buffer_a, 8, loopback.mr_a->lkey };
	cr_assert_eq(ibv_post_send(loopback.qp_a, &send, &bad_send), 0);
	cr_assert_eq(ibv_poll_cq(loopback.cq_b, 1, &wc), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	close_loopback();
}

Test(ops, send_only_refuses_rdma)
{
	struct softrdma_config config;

	test_config_init(&config, SOFTRDMA_PROFILE_THUNDERBOLT, "single", "send-only");
	config.send_only = true;
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_UC, BUFFER_SIZE, 8), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_RDMA_WRITE, loopback.mr_a, 0, 8,
				    &loopback.address_b, 0, 0, 0, 1), EOPNOTSUPP);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_RDMA_WRITE_WITH_IMM, loopback.mr_a, 0, 8,
				    &loopback.address_b, 0, 0, 0, 1), EOPNOTSUPP);
	send_and_check(IBV_WR_SEND, 0);
	close_loopback();
	test_config_init(&config, SOFTRDMA_PROFILE_ROCEV2, "single", "send-only-rc");
	config.send_only = true;
	cr_assert_eq(test_loopback_open(&loopback, &config, IBV_QPT_RC, BUFFER_SIZE, 8), 0);
	cr_assert_eq(test_post_send(loopback.qp_a, IBV_WR_RDMA_READ, loopback.mr_a, 0, 8,
				    &loopback.address_b, 0, 0, 0, 1), EOPNOTSUPP);
	close_loopback();
}

/* Threads of one process, each with its own pair of QPs, sharing the device. */
static void *thread_exchange(void *argument)
{
	struct test_device *device = &loopback.device;
	struct ibv_cq *cq = softrdma_create_cq(device->context, 64, NULL, NULL, 0);
	struct ibv_qp *sender = test_qp_create(device->pd, cq, IBV_QPT_RC, 16);
	struct ibv_qp *receiver = test_qp_create(device->pd, cq, IBV_QPT_RC, 16);
	size_t slot = (size_t) (uintptr_t) argument * 1024;
	struct test_address sender_address, receiver_address;
	intptr_t received = 0;
	struct ibv_wc wc;

	if (!sender || !receiver || test_address_of(device, sender, NULL, &sender_address) ||
	    test_address_of(device, receiver, NULL, &receiver_address) ||
	    test_qp_connect(sender, &receiver_address, 7) ||
	    test_qp_connect(receiver, &sender_address, 7))
		return (void *) -1;
	for (int round = 0; round < 500; round++) {
		if (test_post_recv(receiver, loopback.mr_b, slot, 64, 1) ||
		    test_post_send(sender, IBV_WR_SEND, loopback.mr_a, slot, 64, NULL, 0, 0,
				   IBV_SEND_SIGNALED, 2))
			break;
		for (int completions = 0; completions < 2; completions++) {
			if (test_poll(cq, &wc, TEST_TIMEOUT_MS) != 1 || wc.status != IBV_WC_SUCCESS)
				return (void *) -2;
			received += wc.opcode == IBV_WC_RECV;
		}
	}
	softrdma_destroy_qp(sender);
	softrdma_destroy_qp(receiver);
	softrdma_destroy_cq(cq);
	return (void *) received;
}

Test(ops, threads_share_the_device)
{
	pthread_t threads[4];

	open_loopback(SOFTRDMA_PROFILE_ROCEV2, IBV_QPT_RC, "threads");
	for (uintptr_t index = 0; index < 4; index++)
		cr_assert_eq(pthread_create(&threads[index], NULL, thread_exchange,
					    (void *) index), 0);
	for (int index = 0; index < 4; index++) {
		void *received;

		cr_assert_eq(pthread_join(threads[index], &received), 0);
		cr_assert_eq((intptr_t) received, 500, "thread %d: %ld", index, (long) received);
	}
	close_loopback();
}

Test(ops, status_strings)
{
	cr_assert_str_eq(softrdma_wc_status_str(IBV_WC_SUCCESS), "success");
	cr_assert_str_eq(softrdma_wc_status_str(IBV_WC_RNR_RETRY_EXC_ERR),
			 "RNR retry counter exceeded");
	cr_assert_str_eq(softrdma_wc_status_str((enum ibv_wc_status) 999), "unknown");
}
