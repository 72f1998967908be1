/*
 * softrdma_post.c: post_send and the send queue. A posted WR is checked
 * (state, opcode, sizes, queue depth) and queued in the process; the queue is
 * processed in order right away, and an RC WR that must be retried (no
 * answer from the target, or receiver not ready) stays at its head until a
 * later post_send or poll_cq retries it.
 * A WR stays "outstanding" until a completion at or after it is polled.
 */
#include <stddef.h>
#include <string.h>

#include "softrdma/softrdma_internal.h"

#define SOFTRDMA_SEND_FLAGS (IBV_SEND_SIGNALED | IBV_SEND_INLINE | IBV_SEND_SOLICITED | \
			     IBV_SEND_FENCE)

static bool softrdma_opcode_is_rdma(enum ibv_wr_opcode opcode)
{
	return opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
	       opcode == IBV_WR_RDMA_READ;
}

static int softrdma_send_opcode_check(struct softrdma_qp *qp, enum ibv_wr_opcode opcode)
{
	switch (opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		break;
	case IBV_WR_RDMA_READ:
		if (qp->ibv.qp_type != IBV_QPT_RC)
			return EINVAL;
		break;
	default:
		return EINVAL;
	}
	if (softrdma_process.segment->config.send_only && softrdma_opcode_is_rdma(opcode))
		return EOPNOTSUPP;
	return 0;
}

static uint64_t softrdma_sge_total(const struct ibv_sge *sge, int count)
{
	uint64_t total = 0;

	for (int index = 0; index < count; index++)
		total += sge[index].length;
	return total;
}

static int softrdma_send_check(struct softrdma_qp *qp, const struct ibv_send_wr *wr,
			       uint32_t state)
{
	uint64_t retired = __atomic_load_n(&qp->send_retired, __ATOMIC_ACQUIRE);
	int ret;

	if (state != IBV_QPS_RTS && state != IBV_QPS_ERR)
		return EINVAL;
	ret = softrdma_send_opcode_check(qp, wr->opcode);
	if (ret)
		return ret;
	if (wr->num_sge < 0 || (uint32_t) wr->num_sge > qp->cap.max_send_sge ||
	    (wr->num_sge && !wr->sg_list) || (wr->send_flags & ~SOFTRDMA_SEND_FLAGS))
		return EINVAL;
	if ((wr->send_flags & IBV_SEND_INLINE) &&
	    (wr->opcode == IBV_WR_RDMA_READ ||
	     softrdma_sge_total(wr->sg_list, wr->num_sge) > qp->cap.max_inline_data))
		return EINVAL;
	if (qp->send_posted - retired >= qp->send_depth)
		return ENOMEM;
	return 0;
}

/*
 * Inline data is copied now, so the caller may reuse its buffer at once.
 * post_send tells the process's count of waiting QPs once it has processed
 * the queue: most WRs leave at once, and two atomics per WR for nothing were
 * 2.5 % of an 8 B message's path.
 */
static void softrdma_send_enqueue(struct softrdma_qp *qp, const struct ibv_send_wr *wr)
{
	struct softrdma_send_entry *entry =
		&qp->pending[(qp->pending_head + qp->pending_count) % qp->send_depth];

	memset(entry, 0, offsetof(struct softrdma_send_entry, sge));
	entry->wr_id = wr->wr_id;
	entry->sequence = qp->send_posted++;
	entry->remote_addr = wr->wr.rdma.remote_addr;
	entry->rkey = wr->wr.rdma.rkey;
	entry->opcode = wr->opcode;
	entry->send_flags = wr->send_flags;
	entry->imm_data = wr->imm_data;
	entry->rnr_retries_left = qp->attr.rnr_retry;
	entry->retries_left = qp->attr.retry_cnt;
	if (wr->send_flags & IBV_SEND_INLINE) {
		for (int index = 0; index < wr->num_sge; index++) {
			memcpy(entry->inline_data + entry->inline_length,
			       (void *) (uintptr_t) wr->sg_list[index].addr, wr->sg_list[index].length);
			entry->inline_length += wr->sg_list[index].length;
		}
	} else {
		entry->num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(entry->sge, wr->sg_list, (size_t) wr->num_sge * sizeof(*wr->sg_list));
	}
	qp->pending_count++;
}

/* Processes the queue in order, up to a WR that must wait. Send lock held. */
static void softrdma_send_process(struct softrdma_qp *qp)
{
	uint64_t now = 0;

	while (qp->pending_count) {
		struct softrdma_send_entry *entry = &qp->pending[qp->pending_head];

		/* A QP in ERR flushes at once, a WR waiting to be retried too. */
		if (entry->next_attempt_ns && softrdma_qp_state(qp) != IBV_QPS_ERR) {
			now = now ? now : softrdma_now_ns();
			if (now < entry->next_attempt_ns)
				break;
		}
		if (softrdma_transfer_execute(qp, entry) == SOFTRDMA_TRANSFER_WAIT)
			break;
		qp->pending_head = (qp->pending_head + 1) % qp->send_depth;
		qp->pending_count--;
	}
}

/* The same, and the process's count of waiting QPs told of the change. */
void softrdma_send_progress(struct softrdma_qp *qp)
{
	uint32_t before = qp->pending_count;

	softrdma_send_process(qp);
	softrdma_qp_waiting_change(qp, before);
}

/* Retries the waiting WRs of every QP of this process; cheap when none waits. */
void softrdma_progress_all(void)
{
	struct softrdma_process *process = &softrdma_process;

	if (!__atomic_load_n(&process->waiting_qps, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&process->lock);
	for (struct softrdma_qp *qp = process->qps; qp; qp = qp->next) {
		pthread_mutex_lock(&qp->send_lock);
		softrdma_send_progress(qp);
		pthread_mutex_unlock(&qp->send_lock);
	}
	pthread_mutex_unlock(&process->lock);
}

int softrdma_post_send(struct ibv_qp *ibv_qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct softrdma_qp *qp = (struct softrdma_qp *) ibv_qp;
	uint32_t before, state;
	int ret = 0;

	if (!qp || !bad_wr)
		return softrdma_fail(EINVAL);
	softrdma_fault_plan_tick();
	softrdma_service_poll();
	pthread_mutex_lock(&qp->send_lock);
	before = qp->pending_count;
	state = softrdma_qp_state(qp);
	for (; wr; wr = wr->next) {
		ret = softrdma_send_check(qp, wr, state);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		softrdma_send_enqueue(qp, wr);
	}
	softrdma_send_process(qp);
	softrdma_qp_waiting_change(qp, before);
	pthread_mutex_unlock(&qp->send_lock);
	return ret ? softrdma_fail(ret) : 0;
}
