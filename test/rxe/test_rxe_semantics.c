/*
 * test_rxe_semantics.c: what Linux's Soft-RoCE (rdma_rxe, kernel 6.1) does,
 * checked on the device at hand: the software device's rocev2 profile under
 * `make check`, rxe itself under `make check-rxe` (BOLT_TEST_DEVICE=system in
 * the virtual machine of test/rxe). A difference the rxe run shows is fixed in
 * the software device and stays pinned here: the GID table (each address once,
 * as RoCE v2, empty entries without a type), the port's MTUs, what RTR
 * accepts, registration's edge cases, and the completions of the errors bolt
 * turns into libfabric errors (two QPs of one device connected to each other).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "device/bolt_gid.h"
#include "softrdma/softrdma.h"
#include "verbs/bolt_verbs.h"

#define RXE_GID_TABLE_LENGTH 1024       /* RXE_PORT_GID_TBL_LEN */
#define RXE_EMPTY_GID_INDEX 5
#define RXE_PAIR_BUFFER 4096
#define RXE_POLL_TIMEOUT_S 20   /* emulated, on a loaded machine */

struct rxe_fixture {
	struct bolt_params params;
	struct bolt_verbs verbs;
	struct ibv_device **devices;
	struct ibv_context *context;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

static struct rxe_fixture fixture;

static bool system_device(void)
{
	const char *device = getenv("BOLT_TEST_DEVICE");

	return device && !strcmp(device, "system");
}

static void fixture_open(void)
{
	char namespace_name[64];
	int count;

	if (system_device()) {
		unsetenv("FI_BOLT_SOFT");
	} else {
		snprintf(namespace_name, sizeof(namespace_name), "rxe-semantics-%d", getpid());
		setenv("FI_BOLT_SOFT", "rocev2", 1);
		setenv("FI_BOLT_SOFT_NAMESPACE", namespace_name, 1);
	}
	cr_assert_eq(bolt_params_read(&fixture.params), 0);
	cr_assert_eq(bolt_verbs_open(&fixture.params, &fixture.verbs), 0);
	fixture.devices = fixture.verbs.get_device_list(&count);
	cr_assert(fixture.devices && count >= 1);
	fixture.context = fixture.verbs.open_device(fixture.devices[0]);
	cr_assert(fixture.context);
	fixture.pd = fixture.verbs.alloc_pd(fixture.context);
	cr_assert(fixture.pd);
	fixture.cq = fixture.verbs.create_cq(fixture.context, 64, NULL, NULL, 0);
	cr_assert(fixture.cq);
}

static void fixture_close(void)
{
	struct softrdma_config config = { 0 };
	char name[256];

	fixture.verbs.destroy_cq(fixture.cq);
	fixture.verbs.dealloc_pd(fixture.pd);
	fixture.verbs.close_device(fixture.context);
	fixture.verbs.free_device_list(fixture.devices);
	bolt_verbs_close(&fixture.verbs);
	if (system_device() || softrdma_profile_parse(fixture.params.soft_profile, &config.profile))
		return;
	snprintf(config.namespace_name, sizeof(config.namespace_name), "%s",
		 fixture.params.soft_namespace);
	if (!softrdma_segment_name(&config, name, sizeof(name)))
		shm_unlink(name);
}

TestSuite(rxe, .init = fixture_open, .fini = fixture_close);

static union ibv_gid query_gid(int index)
{
	union ibv_gid gid;

	cr_assert_eq(fixture.verbs.query_gid(fixture.context, 1, index, &gid), 0, "GID %d", index);
	return gid;
}

/* A QP of type in INIT, ready for RTR. */
static struct ibv_qp *qp_in_init(enum ibv_qp_type type)
{
	struct ibv_qp_init_attr init = {
		.send_cq = fixture.cq, .recv_cq = fixture.cq, .qp_type = type,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_qp *qp = fixture.verbs.create_qp(fixture.pd, &init);

	cr_assert(qp);
	cr_assert_eq(fixture.verbs.modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	return qp;
}

/* RTR of an RC QP towards itself, from sgid_index, with path_mtu. */
static int rtr(struct ibv_qp *qp, int sgid_index, enum ibv_mtu path_mtu)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = path_mtu, .dest_qp_num = qp->qp_num,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = query_gid(1), .sgid_index = (uint8_t) sgid_index,
				 .hop_limit = 64 },
		},
	};

	return fixture.verbs.modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER);
}

/* rxe lists each of its netdev's addresses once, as a RoCE v2 GID: link-local first. */
Test(rxe, gid_table_lists_each_address_once_as_roce_v2)
{
	struct ibv_port_attr port;
	enum ibv_gid_type type;
	union ibv_gid gid;

	cr_assert_eq(fixture.verbs.query_port(fixture.context, 1, &port), 0);
	cr_expect_eq(port.state, IBV_PORT_ACTIVE);
	cr_expect_eq(port.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_expect_eq(port.gid_tbl_len, RXE_GID_TABLE_LENGTH);
	gid = query_gid(0);
	cr_expect_eq(bolt_gid_kind(&gid), BOLT_GID_KIND_LINK_LOCAL);
	gid = query_gid(1);
	cr_expect_eq(bolt_gid_kind(&gid), BOLT_GID_KIND_IPV4_MAPPED);
	for (int index = 0; index < 2; index++) {
		cr_assert_eq(fixture.verbs.query_gid_type(fixture.context, 1, index, &type), 0);
		cr_expect_eq(type, IBV_GID_TYPE_ROCE_V2, "GID %d is not RoCE v2", index);
	}
}

/* An empty entry reads as zero and has no type (ENODATA); past the table, EINVAL. */
Test(rxe, empty_gid_entries_are_zero_without_a_type)
{
	enum ibv_gid_type type;
	union ibv_gid gid;

	for (int index = 2; index < 16; index++) {
		gid = query_gid(index);
		cr_expect_eq(bolt_gid_kind(&gid), BOLT_GID_KIND_ZERO, "GID %d", index);
		cr_expect_eq(fixture.verbs.query_gid_type(fixture.context, 1, index, &type), ENODATA,
			     "type of empty GID %d", index);
	}
	cr_expect_neq(fixture.verbs.query_gid(fixture.context, 1, RXE_GID_TABLE_LENGTH, &gid), 0);
	cr_expect_eq(fixture.verbs.query_gid_type(fixture.context, 1, RXE_GID_TABLE_LENGTH, &type),
		     EINVAL);
}

/* A 1500-byte Ethernet link: 1024 active, 4096 the most the device takes. */
Test(rxe, port_mtu_follows_the_ethernet_link)
{
	struct ibv_port_attr port;

	cr_assert_eq(fixture.verbs.query_port(fixture.context, 1, &port), 0);
	cr_expect_eq(port.active_mtu, IBV_MTU_1024);
	cr_expect_eq(port.max_mtu, IBV_MTU_4096);
}

/* RTR takes a path MTU up to the port's max_mtu, above the active one. */
Test(rxe, rtr_accepts_a_path_mtu_up_to_the_maximum)
{
	struct ibv_qp *qp = qp_in_init(IBV_QPT_RC);
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	cr_assert_eq(rtr(qp, 1, IBV_MTU_4096), 0);
	cr_assert_eq(fixture.verbs.query_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PATH_MTU, &init), 0);
	cr_expect_eq(attr.qp_state, IBV_QPS_RTR);
	cr_expect_eq(attr.path_mtu, IBV_MTU_4096);
	cr_assert_eq(fixture.verbs.destroy_qp(qp), 0);
}

/* The kernel's GID cache answers for sgid_index: an empty entry is ENODATA. */
Test(rxe, rtr_from_an_empty_gid_entry_is_enodata)
{
	struct ibv_qp *qp = qp_in_init(IBV_QPT_RC);

	cr_expect_eq(rtr(qp, RXE_EMPTY_GID_INDEX, IBV_MTU_1024), ENODATA);
	cr_expect_eq(rtr(qp, 1, IBV_MTU_1024), 0, "a good RTR after the refused one");
	cr_assert_eq(fixture.verbs.destroy_qp(qp), 0);
}

/* Remote write needs local write; an empty region registers; NULL cannot be pinned. */
Test(rxe, registration_edge_cases)
{
	static char buffer[4096];
	struct ibv_mr *mr;

	errno = 0;
	cr_expect_null(fixture.verbs.reg_mr(fixture.pd, buffer, sizeof(buffer),
					    IBV_ACCESS_REMOTE_WRITE));
	cr_expect_eq(errno, EINVAL, "remote write without local write");
	mr = fixture.verbs.reg_mr(fixture.pd, buffer, 0, IBV_ACCESS_LOCAL_WRITE);
	cr_expect_not_null(mr, "an empty region");
	if (mr)
		cr_expect_eq(fixture.verbs.dereg_mr(mr), 0);
	errno = 0;
	cr_expect_null(fixture.verbs.reg_mr(fixture.pd, NULL, sizeof(buffer),
					    IBV_ACCESS_LOCAL_WRITE));
	cr_expect_eq(errno, EFAULT, "NULL is not memory the device can pin");
}

/* Two RC or UC QPs of the device connected to each other: A completes into fixture.cq. */
struct rxe_pair {
	struct ibv_qp *a, *b;
	struct ibv_cq *cq_b;
	struct ibv_mr *mr_a, *mr_b;
	char buffer_a[RXE_PAIR_BUFFER], buffer_b[RXE_PAIR_BUFFER];
};

static void pair_connect(struct ibv_qp *qp, uint32_t remote_qpn, uint8_t rnr_retry)
{
	bool rc = qp->qp_type == IBV_QPT_RC;
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = remote_qpn,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = query_gid(1), .sgid_index = 1, .hop_limit = 64 } },
	};
	struct ibv_qp_attr rts = {
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = rnr_retry,
		.max_rd_atomic = 1,
	};
	int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	int rts_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	if (rc) {
		rtr_mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		rts_mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_MAX_QP_RD_ATOMIC;
	}
	cr_assert_eq(fixture.verbs.modify_qp(qp, &rtr, rtr_mask), 0);
	cr_assert_eq(fixture.verbs.modify_qp(qp, &rts, rts_mask), 0);
}

static struct ibv_qp *pair_qp(enum ibv_qp_type type, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_qp *qp = fixture.verbs.create_qp(fixture.pd, &init);

	cr_assert(qp);
	cr_assert_eq(fixture.verbs.modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	return qp;
}

static struct rxe_pair *pair_open(enum ibv_qp_type type, uint8_t rnr_retry)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct rxe_pair *pair = calloc(1, sizeof(*pair));

	cr_assert(pair);
	pair->cq_b = fixture.verbs.create_cq(fixture.context, 64, NULL, NULL, 0);
	cr_assert(pair->cq_b);
	pair->mr_a = fixture.verbs.reg_mr(fixture.pd, pair->buffer_a, RXE_PAIR_BUFFER, access);
	pair->mr_b = fixture.verbs.reg_mr(fixture.pd, pair->buffer_b, RXE_PAIR_BUFFER, access);
	cr_assert(pair->mr_a && pair->mr_b);
	pair->a = pair_qp(type, fixture.cq);
	pair->b = pair_qp(type, pair->cq_b);
	pair_connect(pair->a, pair->b->qp_num, rnr_retry);
	pair_connect(pair->b, pair->a->qp_num, 7);
	return pair;
}

static void pair_close(struct rxe_pair *pair)
{
	cr_assert_eq(fixture.verbs.destroy_qp(pair->a), 0);
	cr_assert_eq(fixture.verbs.destroy_qp(pair->b), 0);
	cr_assert_eq(fixture.verbs.dereg_mr(pair->mr_a), 0);
	cr_assert_eq(fixture.verbs.dereg_mr(pair->mr_b), 0);
	cr_assert_eq(fixture.verbs.destroy_cq(pair->cq_b), 0);
	free(pair);
}

static void post_receive(struct ibv_qp *qp, struct ibv_mr *mr, uint32_t length, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t) mr->addr, .length = length, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	cr_assert_eq(fixture.verbs.post_recv(qp, &wr, &bad), 0);
}

/* A signaled SEND, or an RDMA WRITE to rkey at the start of B's buffer; wr_id is the immediate. */
static void post_send(struct rxe_pair *pair, enum ibv_wr_opcode opcode, uint32_t offset,
		      uint32_t length, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t) pair->buffer_a + offset, .length = length,
		.lkey = pair->mr_a->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = opcode,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl((uint32_t) wr_id),
		.wr.rdma = { .remote_addr = (uintptr_t) pair->buffer_b, .rkey = rkey },
	}, *bad;

	cr_assert_eq(fixture.verbs.post_send(pair->a, &wr, &bad), 0);
}

static struct ibv_wc expect_completion(struct ibv_cq *cq)
{
	time_t start = time(NULL);
	struct ibv_wc wc;
	int ret;

	while ((ret = fixture.verbs.poll_cq(cq, 1, &wc)) == 0 &&
	       time(NULL) - start < RXE_POLL_TIMEOUT_S)
		sched_yield();
	cr_assert_eq(ret, 1, "no completion in %d s", RXE_POLL_TIMEOUT_S);
	return wc;
}

static void expect_no_completion(struct ibv_cq *cq, int milliseconds)
{
	struct timespec pause = { .tv_nsec = 1000000 };
	struct ibv_wc wc;

	for (int waited = 0; waited < milliseconds; waited++) {
		cr_assert_eq(fixture.verbs.poll_cq(cq, 1, &wc), 0, "a completion (wr %lu, %s)",
			     (unsigned long) wc.wr_id, fixture.verbs.wc_status_str(wc.status));
		nanosleep(&pause, NULL);
	}
}

static void expect_status(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status status)
{
	struct ibv_wc wc = expect_completion(cq);

	cr_expect_eq(wc.wr_id, wr_id);
	cr_expect_eq(wc.status, status, "wr %lu: %s, not %s", (unsigned long) wr_id,
		     fixture.verbs.wc_status_str(wc.status), fixture.verbs.wc_status_str(status));
}

static void expect_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	cr_assert_eq(fixture.verbs.query_qp(qp, &attr, IBV_QP_STATE, &init), 0);
	cr_expect_eq(attr.qp_state, state, "QP state %d, not %d", attr.qp_state, state);
}

/*
 * The receiver: an error (rxe takes the short receive for a malformed WQE:
 * LOC_QP_OP_ERR, where the IB spec says LOC_LEN_ERR), then its QP in error
 * flushes the next receive; the sender: REM_OP_ERR (spec: REM_INV_REQ_ERR).
 */
Test(rxe, rc_receive_too_short_fails_both_ends)
{
	struct rxe_pair *pair = pair_open(IBV_QPT_RC, 7);

	post_receive(pair->b, pair->mr_b, 50, 1);
	post_receive(pair->b, pair->mr_b, 50, 2);
	post_send(pair, IBV_WR_SEND, 0, 100, 0, 1);
	expect_status(pair->cq_b, 1, IBV_WC_LOC_QP_OP_ERR);
	expect_status(pair->cq_b, 2, IBV_WC_WR_FLUSH_ERR);
	expect_state(pair->b, IBV_QPS_ERR);
	expect_status(fixture.cq, 1, IBV_WC_REM_OP_ERR);
	pair_close(pair);
}

/*
 * A wrong rkey: RC answers with a remote access error, its QP goes to error
 * and what follows is flushed; UC has no acknowledgements, so the target
 * drops the write unseen and the QP carries on.
 */
static void write_with_a_wrong_key(enum ibv_qp_type type)
{
	bool rc = type == IBV_QPT_RC;
	struct rxe_pair *pair = pair_open(type, 7);

	memset(pair->buffer_a, 0x5a, 128);
	post_send(pair, IBV_WR_RDMA_WRITE, 0, 128, pair->mr_b->rkey ^ 0x40000, 1);
	expect_status(fixture.cq, 1, rc ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS);
	expect_state(pair->a, rc ? IBV_QPS_ERR : IBV_QPS_RTS);
	post_send(pair, IBV_WR_RDMA_WRITE, 0, 8, pair->mr_b->rkey, 2);
	expect_status(fixture.cq, 2, rc ? IBV_WC_WR_FLUSH_ERR : IBV_WC_SUCCESS);
	if (rc)
		cr_expect_eq(pair->buffer_b[0], 0, "a write landed");
	pair_close(pair);
}

Test(rxe, rc_write_with_a_wrong_key_is_a_remote_access_error)
{
	write_with_a_wrong_key(IBV_QPT_RC);
}

Test(rxe, uc_write_with_a_wrong_key_is_dropped_silently)
{
	write_with_a_wrong_key(IBV_QPT_UC);
}

/* A SEND that finds no receive, with rnr_retry 0: the first RNR NAK ends it. */
Test(rxe, rc_receiver_not_ready_without_retries)
{
	struct rxe_pair *pair = pair_open(IBV_QPT_RC, 0);

	post_send(pair, IBV_WR_SEND, 0, 64, 0, 1);
	expect_status(fixture.cq, 1, IBV_WC_RNR_RETRY_EXC_ERR);
	expect_state(pair->a, IBV_QPS_ERR);
	pair_close(pair);
}

/* A local buffer past its region's end: a local protection error, then flush. */
Test(rxe, send_past_the_local_region_is_a_protection_error)
{
	struct rxe_pair *pair = pair_open(IBV_QPT_RC, 7);

	post_receive(pair->b, pair->mr_b, 64, 1);
	post_send(pair, IBV_WR_SEND, RXE_PAIR_BUFFER - 8, 64, 0, 1);
	expect_status(fixture.cq, 1, IBV_WC_LOC_PROT_ERR);
	expect_state(pair->a, IBV_QPS_ERR);
	post_send(pair, IBV_WR_SEND, 0, 8, 0, 2);
	expect_status(fixture.cq, 2, IBV_WC_WR_FLUSH_ERR);
	pair_close(pair);
}

/* A receive whose lkey names no region: to rxe a malformed WQE too (spec: LOC_PROT_ERR). */
Test(rxe, receive_with_a_wrong_key_fails_both_ends)
{
	struct rxe_pair *pair = pair_open(IBV_QPT_RC, 7);
	struct ibv_sge sge = {
		.addr = (uintptr_t) pair->buffer_b, .length = 64, .lkey = pair->mr_b->lkey ^ 0x40000,
	};
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	cr_assert_eq(fixture.verbs.post_recv(pair->b, &wr, &bad), 0);
	post_send(pair, IBV_WR_SEND, 0, 64, 0, 1);
	expect_status(pair->cq_b, 1, IBV_WC_LOC_QP_OP_ERR);
	expect_state(pair->b, IBV_QPS_ERR);
	expect_status(fixture.cq, 1, IBV_WC_REM_OP_ERR);
	pair_close(pair);
}

/* A write with immediate consumes a receive, which reports the written length. */
Test(rxe, write_with_immediate_consumes_a_receive)
{
	struct rxe_pair *pair = pair_open(IBV_QPT_RC, 7);
	struct ibv_sge sge = {
		.addr = (uintptr_t) pair->buffer_b + 2048, .length = 16, .lkey = pair->mr_b->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc;

	memset(pair->buffer_a, 0x5a, 1000);
	memset(pair->buffer_b + 2048, 0xa5, 16);
	cr_assert_eq(fixture.verbs.post_recv(pair->b, &wr, &bad), 0);
	post_send(pair, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 1000, pair->mr_b->rkey, 6);
	wc = expect_completion(pair->cq_b);
	cr_expect_eq(wc.status, IBV_WC_SUCCESS);
	cr_expect_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_expect_eq(wc.wr_id, 77);
	cr_expect(wc.wc_flags & IBV_WC_WITH_IMM);
	cr_expect_eq(wc.imm_data, htonl(6));
	cr_expect_eq(wc.byte_len, 1000);
	cr_expect_eq((unsigned char) pair->buffer_b[999], 0x5a);
	cr_expect_eq((unsigned char) pair->buffer_b[2048], 0xa5, "the receive's buffer was written");
	wc = expect_completion(fixture.cq);
	cr_expect_eq(wc.status, IBV_WC_SUCCESS);
	cr_expect_eq(wc.opcode, IBV_WC_RDMA_WRITE);
	pair_close(pair);
}

/* UC: a SEND that finds no receive is lost, unseen by both ends; the next one lands. */
Test(rxe, uc_send_without_a_receive_is_lost)
{
	struct rxe_pair *pair = pair_open(IBV_QPT_UC, 0);
	struct ibv_wc wc;

	post_send(pair, IBV_WR_SEND, 0, 64, 0, 1);
	expect_status(fixture.cq, 1, IBV_WC_SUCCESS);
	expect_no_completion(pair->cq_b, 100);
	post_receive(pair->b, pair->mr_b, 64, 2);
	expect_no_completion(pair->cq_b, 200);
	post_send(pair, IBV_WR_SEND, 0, 32, 0, 3);
	expect_status(fixture.cq, 3, IBV_WC_SUCCESS);
	wc = expect_completion(pair->cq_b);
	cr_expect_eq(wc.status, IBV_WC_SUCCESS);
	cr_expect_eq(wc.wr_id, 2);
	cr_expect_eq(wc.byte_len, 32, "the lost SEND arrived (%u bytes)", wc.byte_len);
	pair_close(pair);
}
