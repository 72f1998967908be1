/*
 * bolt_qp.c: creating and connecting queue pairs. RC gets retries and
 * receiver-not-ready retry forever; UC has neither, which is why bolt's
 * protocols use credits and the side channel watches liveness.
 */
#include <errno.h>
#include <string.h>

#include "rails/bolt_qp.h"

#define BOLT_QP_SGE 4
#define BOLT_QP_RC_TIMEOUT 14           /* 4.096 us * 2^14: about 67 ms per retry */
#define BOLT_QP_RC_TIMEOUT_MAX 31       /* the attribute's 5 bits */
#define BOLT_QP_RC_RETRY_COUNT 7
#define BOLT_QP_RNR_RETRY_FOREVER 7
#define BOLT_QP_MIN_RNR_TIMER 12        /* 0.64 ms */

uint8_t bolt_qp_ack_timeout(int patience_ms)
{
	uint64_t patience_ns = patience_ms > 0 ? (uint64_t) patience_ms * 1000000 : 0;
	uint8_t exponent = BOLT_QP_RC_TIMEOUT;

	/* The first try and every retry each wait one timeout, 4096 ns * 2^exponent. */
	while (exponent < BOLT_QP_RC_TIMEOUT_MAX &&
	       (BOLT_QP_RC_RETRY_COUNT + 1) * (4096ull << exponent) < patience_ns)
		exponent++;
	return exponent;
}

struct ibv_qp *bolt_qp_create(struct bolt_verbs *verbs, struct ibv_pd *pd, struct ibv_cq *cq,
			      enum ibv_qp_type type, uint32_t depth, uint32_t max_inline)
{
	struct ibv_qp_init_attr init_attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = type,
		.cap = {
			.max_send_wr = depth,
			.max_recv_wr = depth,
			.max_send_sge = BOLT_QP_SGE,
			.max_recv_sge = BOLT_QP_SGE,
			.max_inline_data = max_inline,
		},
	};

	return verbs->create_qp(pd, &init_attr);
}

static int bolt_qp_modify(struct bolt_verbs *verbs, struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int mask, const char *step)
{
	int ret = verbs->modify_qp(qp, attr, mask);

	if (ret) {
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL, "QP %u: changing to %s failed: %s\n",
			qp->qp_num, step, strerror(ret));
		return ret == ENOMEM ? -FI_ENOMEM : -FI_EINVAL;
	}
	return 0;
}

int bolt_qp_init(struct bolt_verbs *verbs, struct ibv_qp *qp, uint8_t port_num)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = port_num,
		.pkey_index = 0,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	/*
	 * Peers write, and on RC (UC has no reads) read the messages offered
	 * them; only registrations exposed for that one transfer let them
	 * (bolt_mr_cache.h).
	 */
	if (qp->qp_type == IBV_QPT_RC)
		attr.qp_access_flags |= IBV_ACCESS_REMOTE_READ;

	return bolt_qp_modify(verbs, qp, &attr,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
			      "INIT");
}

static int bolt_qp_ready_to_receive(struct bolt_verbs *verbs, struct ibv_qp *qp,
				    const struct bolt_qp_local *local,
				    const struct bolt_qp_remote *remote)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = local->path_mtu,
		.dest_qp_num = remote->qpn,
		.rq_psn = remote->psn,
		.ah_attr = {
			.is_global = 1,
			.port_num = local->port_num,
			.grh = {
				.dgid = remote->gid,
				.sgid_index = (uint8_t) local->gid_index,
				.hop_limit = 64,
			},
		},
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = BOLT_QP_MIN_RNR_TIMER,
	};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	return bolt_qp_modify(verbs, qp, &attr, mask, "RTR");
}

static int bolt_qp_ready_to_send(struct bolt_verbs *verbs, struct ibv_qp *qp,
				 const struct bolt_qp_local *local)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTS,
		.sq_psn = local->psn,
		.timeout = local->ack_timeout ? local->ack_timeout : BOLT_QP_RC_TIMEOUT,
		.retry_cnt = BOLT_QP_RC_RETRY_COUNT,
		.rnr_retry = BOLT_QP_RNR_RETRY_FOREVER,
		.max_rd_atomic = 1,
	};
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	return bolt_qp_modify(verbs, qp, &attr, mask, "RTS");
}

int bolt_qp_connect(struct bolt_verbs *verbs, struct ibv_qp *qp, const struct bolt_qp_local *local,
		    const struct bolt_qp_remote *remote)
{
	int ret;

	ret = bolt_qp_ready_to_receive(verbs, qp, local, remote);
	if (ret)
		return ret;
	return bolt_qp_ready_to_send(verbs, qp, local);
}

int bolt_qp_error(struct bolt_verbs *verbs, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	return bolt_qp_modify(verbs, qp, &attr, IBV_QP_STATE, "ERR");
}
