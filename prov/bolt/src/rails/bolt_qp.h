/*
 * bolt_qp.h: queue pairs as bolt uses them: created with one CQ for both
 * directions, and connected to a peer through INIT, RTR and RTS with the
 * attributes each transition requires, as rdma-core's rc_pingpong does.
 */
#ifndef BOLT_QP_H
#define BOLT_QP_H

#include "verbs/bolt_verbs.h"

/*
 * Every work request bolt posts carries one of these as its wr_id: the
 * domain's progress hands each device completion to its handler, so the code
 * that posted a request is the code that finishes it.
 */
struct bolt_work_completion {
	void (*handle)(struct bolt_work_completion *work, const struct ibv_wc *wc);
};

/* What the peer's side channel tells about its queue pair. */
struct bolt_qp_remote {
	uint32_t qpn;
	uint32_t psn;
	union ibv_gid gid;
};

/* Where the local queue pair sits. */
struct bolt_qp_local {
	uint8_t port_num;
	int gid_index;
	enum ibv_mtu path_mtu;
	uint32_t psn;
	uint8_t ack_timeout;            /* RC's local ACK timeout exponent; 0: bolt's default */
};

/*
 * The local ACK timeout (4.096 us * 2^exponent) at which RC's retries span at
 * least patience_ms: a cable down or a host stopped for less than the
 * liveness time must not exhaust them, since only the side channel judges
 * whether a peer is gone (rxe gives up after retry_cnt + 1 timeouts).
 */
uint8_t bolt_qp_ack_timeout(int patience_ms);

/* NULL with errno set, as create_qp. depth is the WR capacity of each queue. */
struct ibv_qp *bolt_qp_create(struct bolt_verbs *verbs, struct ibv_pd *pd, struct ibv_cq *cq,
			      enum ibv_qp_type type, uint32_t depth, uint32_t max_inline);

/*
 * To INIT, where receives can be posted: they must be, before the peer may
 * send, since UC drops a SEND that finds none. 0 or a negative error code.
 */
int bolt_qp_init(struct bolt_verbs *verbs, struct ibv_qp *qp, uint8_t port_num);

/* From INIT to RTR and RTS; 0 or a negative error code, the failed step logged. */
int bolt_qp_connect(struct bolt_verbs *verbs, struct ibv_qp *qp, const struct bolt_qp_local *local,
		    const struct bolt_qp_remote *remote);

/*
 * To ERR: what is posted on it completes at once with a flush error, so that
 * it can be posted again elsewhere (failover). 0 or a negative error code.
 */
int bolt_qp_error(struct bolt_verbs *verbs, struct ibv_qp *qp);

#endif /* BOLT_QP_H */
