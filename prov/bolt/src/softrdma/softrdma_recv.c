/*
 * softrdma_recv.c: the receive queue, and the error state that flushes it.
 * Posted receives wait in a ring in the QP's shared slot, where the sender's
 * process, which does the delivery, takes them; their completions go to the
 * QP's receive CQ. "Outstanding" on
 * this queue means posted and not yet consumed: a receive a sender took
 * stays outstanding until its message completes, and goes back to the head
 * of the ring if the message is lost on the way (copy mode shm).
 */
#include <string.h>

#include "softrdma/softrdma_internal.h"

/*
 * Verbs' rule: an error completion moves the QP to ERR; its receives are
 * flushed. Here, not in softrdma_qp.c, since a flush completes receives in
 * error, and completing a receive in error enters the error state.
 */
void softrdma_qp_enter_error_locked(struct softrdma_segment *segment, uint32_t index)
{
	struct softrdma_shared_qp *shared = softrdma_table_slot(segment, &segment->qps, index);

	if (!shared->slot.in_use)
		return;
	__atomic_store_n(&shared->state, IBV_QPS_ERR, __ATOMIC_RELEASE);
	softrdma_receive_flush_locked(segment, index);
}

/* Completes a receive of the QP at qp_index; an error moves the QP to ERR. */
void softrdma_receive_complete_locked(struct softrdma_segment *segment, uint32_t qp_index,
				      struct ibv_wc *wc,
				      const struct softrdma_completion_payload *payload)
{
	struct softrdma_shared_qp *shared = softrdma_table_slot(segment, &segment->qps, qp_index);

	if (!shared->slot.in_use)
		return;
	wc->qp_num = shared->qpn;
	softrdma_cq_push_locked(segment, shared->recv_cq, wc, qp_index, false, 0, payload);
	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
		softrdma_qp_enter_error_locked(segment, qp_index);
}

static void softrdma_receive_flush_one_locked(struct softrdma_segment *segment,
					      uint32_t qp_index, uint64_t wr_id)
{
	struct ibv_wc wc = {
		.wr_id = wr_id,
		.status = IBV_WC_WR_FLUSH_ERR,
		.opcode = IBV_WC_RECV,
	};

	softrdma_receive_complete_locked(segment, qp_index, &wc, NULL);
}

bool softrdma_receive_pop_locked(struct softrdma_shared_qp *shared,
				 struct softrdma_shared_receive *receive)
{
	if (!shared->receive_count)
		return false;
	*receive = shared->receives[shared->receive_head];
	shared->receive_head = (shared->receive_head + 1) % SOFTRDMA_RECEIVE_RING;
	shared->receive_count--;
	return true;
}

bool softrdma_receive_take_locked(struct softrdma_shared_qp *shared,
				  struct softrdma_shared_receive *receive, uint32_t *epoch)
{
	if (!softrdma_receive_pop_locked(shared, receive))
		return false;
	shared->receive_taken++;
	*epoch = shared->receive_epoch;
	return true;
}

/* The QP a receive was taken from, unless it was destroyed or reset since. */
static struct softrdma_shared_qp *softrdma_receive_owner_locked(struct softrdma_segment *segment,
								uint32_t qp_index, uint32_t qpn,
								uint32_t epoch)
{
	struct softrdma_shared_qp *shared = softrdma_table_slot(segment, &segment->qps, qp_index);

	if (!shared->slot.in_use || shared->qpn != qpn || shared->receive_epoch != epoch)
		return NULL;
	return shared;
}

void softrdma_receive_finish_locked(struct softrdma_segment *segment, uint32_t qp_index,
				    uint32_t qpn, uint32_t epoch, struct ibv_wc *wc,
				    const struct softrdma_completion_payload *payload)
{
	struct softrdma_shared_qp *shared = softrdma_receive_owner_locked(segment, qp_index, qpn,
									  epoch);

	if (!shared)
		return;
	shared->receive_taken--;
	softrdma_receive_complete_locked(segment, qp_index, wc, payload);
}

/*
 * There is room at the head: post_recv counts taken receives against the
 * limit, and the limit is at most the ring. A QP that failed meanwhile
 * flushes it, as it flushed the others.
 */
void softrdma_receive_give_back_locked(struct softrdma_segment *segment, uint32_t qp_index,
				       uint32_t qpn, uint32_t epoch,
				       const struct softrdma_shared_receive *receive)
{
	struct softrdma_shared_qp *shared = softrdma_receive_owner_locked(segment, qp_index, qpn,
									  epoch);

	if (!shared)
		return;
	shared->receive_taken--;
	if (shared->state == IBV_QPS_ERR) {
		softrdma_receive_flush_one_locked(segment, qp_index, receive->wr_id);
		return;
	}
	shared->receive_head = (shared->receive_head + SOFTRDMA_RECEIVE_RING - 1) %
			       SOFTRDMA_RECEIVE_RING;
	shared->receives[shared->receive_head] = *receive;
	shared->receive_count++;
}

void softrdma_receive_flush_locked(struct softrdma_segment *segment, uint32_t qp_index)
{
	struct softrdma_shared_qp *shared = softrdma_table_slot(segment, &segment->qps, qp_index);
	struct softrdma_shared_receive receive;

	while (softrdma_receive_pop_locked(shared, &receive))
		softrdma_receive_flush_one_locked(segment, qp_index, receive.wr_id);
}

/* RESET: senders that took a receive before it find the epoch changed. */
void softrdma_receive_clear_locked(struct softrdma_shared_qp *shared)
{
	shared->receive_head = 0;
	shared->receive_count = 0;
	shared->receive_taken = 0;
	shared->receive_epoch++;
}

static int softrdma_receive_post_locked(struct softrdma_segment *segment, struct softrdma_qp *qp,
					const struct ibv_recv_wr *wr)
{
	struct softrdma_shared_qp *shared = softrdma_qp_shared(qp);
	struct softrdma_shared_receive *receive;

	if (wr->num_sge < 0 || (uint32_t) wr->num_sge > qp->cap.max_recv_sge ||
	    (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (shared->state == IBV_QPS_RESET)
		return EINVAL;
	if (shared->state == IBV_QPS_ERR) {
		softrdma_receive_flush_one_locked(segment, qp->index, wr->wr_id);
		return 0;
	}
	if (shared->receive_count + shared->receive_taken >= shared->receive_limit)
		return ENOMEM;
	receive = &shared->receives[(shared->receive_head + shared->receive_count) %
				    SOFTRDMA_RECEIVE_RING];
	receive->wr_id = wr->wr_id;
	receive->num_sge = (uint32_t) wr->num_sge;
	if (wr->num_sge)
		memcpy(receive->sge, wr->sg_list, (size_t) wr->num_sge * sizeof(*wr->sg_list));
	shared->receive_count++;
	return 0;
}

int softrdma_post_recv(struct ibv_qp *ibv_qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct softrdma_qp *qp = (struct softrdma_qp *) ibv_qp;
	struct softrdma_segment *segment = softrdma_process.segment;
	int ret = 0;

	if (!qp || !bad_wr)
		return softrdma_fail(EINVAL);
	softrdma_service_poll();
	softrdma_lock(segment);
	for (; wr; wr = wr->next) {
		ret = softrdma_receive_post_locked(segment, qp, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	softrdma_unlock(segment);
	return ret ? softrdma_fail(ret) : 0;
}
