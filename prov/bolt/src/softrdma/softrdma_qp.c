/*
 * softrdma_qp.c: queue pairs: creation (types and limits the profile
 * offers), destruction, query, the process's list of its QPs and the count
 * of those whose send queue waits. A QP's shared slot holds what other
 * processes need (state, its connection, its posted receives); its local
 * object holds the send queue, which only its own process processes
 * (softrdma_post.c). State changes are in softrdma_modify.c, the error
 * state in softrdma_recv.c.
 */
#include <stdlib.h>
#include <string.h>

#include "softrdma/softrdma_internal.h"

struct softrdma_shared_qp *softrdma_qp_shared(struct softrdma_qp *qp)
{
	struct softrdma_segment *segment = softrdma_process.segment;

	return softrdma_table_slot(segment, &segment->qps, qp->index);
}

uint32_t softrdma_qp_state(struct softrdma_qp *qp)
{
	return __atomic_load_n(&softrdma_qp_shared(qp)->state, __ATOMIC_ACQUIRE);
}

static int softrdma_qp_type_check(enum ibv_qp_type type)
{
	const struct softrdma_profile_limits *limits = &softrdma_process.segment->limits;

	if (type == IBV_QPT_UC || (type == IBV_QPT_RC && limits->rc_supported))
		return 0;
	return EOPNOTSUPP;
}

static int softrdma_qp_init_check(struct softrdma_pd *pd, const struct ibv_qp_init_attr *attr)
{
	const struct softrdma_profile_limits *limits = &softrdma_process.segment->limits;
	const struct ibv_qp_cap *cap = &attr->cap;

	if (!pd || !attr->send_cq || !attr->recv_cq || attr->srq ||
	    attr->send_cq->context != pd->ibv.context || attr->recv_cq->context != pd->ibv.context)
		return EINVAL;
	if (cap->max_send_wr > (uint32_t) limits->reported_max_wr ||
	    cap->max_recv_wr > (uint32_t) limits->reported_max_wr ||
	    cap->max_send_sge > (uint32_t) limits->max_sge ||
	    cap->max_recv_sge > (uint32_t) limits->max_sge ||
	    cap->max_inline_data > (uint32_t) limits->max_inline_data)
		return EINVAL;
	return softrdma_qp_type_check(attr->qp_type);
}

static uint32_t softrdma_queue_depth(uint32_t requested)
{
	uint32_t accepted = (uint32_t) softrdma_process.segment->limits.accepted_max_wr;

	return requested < accepted ? requested : accepted;
}

/* The 11th QP of a Thunderbolt device fails with EBUSY; a full table with ENOMEM. */
static int softrdma_qp_insert(struct softrdma_qp *qp, const struct ibv_qp_init_attr *attr)
{
	struct softrdma_segment *segment = softrdma_process.segment;
	int device_id = qp->pd->context->device->device_id;
	struct softrdma_shared_device *device = &segment->devices[device_id];
	struct softrdma_shared_qp *shared;
	int index;

	softrdma_lock(segment);
	if (softrdma_device_full_locked(segment, &device->qp_count, segment->limits.max_qp)) {
		softrdma_unlock(segment);
		return EBUSY;
	}
	index = softrdma_table_alloc(segment, &segment->qps, softrdma_process.pid);
	if (index < 0) {
		softrdma_unlock(segment);
		return ENOMEM;
	}
	shared = softrdma_table_slot(segment, &segment->qps, (uint32_t) index);
	shared->qpn = softrdma_table_handle(&segment->qps, &shared->slot, (uint32_t) index);
	shared->device = device_id;
	shared->pd_id = qp->pd->pd_id;
	shared->type = attr->qp_type;
	shared->state = IBV_QPS_RESET;
	shared->remote_device = -1;
	shared->send_cq = (int32_t) qp->send_cq->index;
	shared->recv_cq = (int32_t) qp->recv_cq->index;
	shared->receive_limit = softrdma_queue_depth(attr->cap.max_recv_wr);
	device->qp_count++;
	softrdma_unlock(segment);
	qp->index = (uint32_t) index;
	qp->ibv.qp_num = shared->qpn;
	return 0;
}

static void softrdma_qp_list_add(struct softrdma_qp *qp)
{
	struct softrdma_process *process = &softrdma_process;

	pthread_mutex_lock(&process->lock);
	qp->next = process->qps;
	if (process->qps)
		process->qps->previous = qp;
	process->qps = qp;
	process->qps_by_slot[qp->index] = qp;
	pthread_mutex_unlock(&process->lock);
}

static void softrdma_qp_list_remove(struct softrdma_qp *qp)
{
	struct softrdma_process *process = &softrdma_process;

	pthread_mutex_lock(&process->lock);
	if (qp->previous)
		qp->previous->next = qp->next;
	else
		process->qps = qp->next;
	if (qp->next)
		qp->next->previous = qp->previous;
	/* From here on no completion of it retires anything (softrdma_cq.c). */
	process->qps_by_slot[qp->index] = NULL;
	pthread_mutex_unlock(&process->lock);
}

static void softrdma_qp_fill(struct softrdma_qp *qp, const struct ibv_qp_init_attr *attr)
{
	qp->ibv.context = qp->pd->ibv.context;
	qp->ibv.qp_context = attr->qp_context;
	qp->ibv.pd = &qp->pd->ibv;
	qp->ibv.send_cq = attr->send_cq;
	qp->ibv.recv_cq = attr->recv_cq;
	qp->ibv.handle = qp->index;
	qp->ibv.state = IBV_QPS_RESET;
	qp->ibv.qp_type = attr->qp_type;
	pthread_mutex_init(&qp->ibv.mutex, NULL);
	pthread_cond_init(&qp->ibv.cond, NULL);
	qp->cap = attr->cap;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.port_num = SOFTRDMA_PORT;
}

/*
 * How many of this process's QPs hold WRs not processed yet: progress_all
 * looks at nothing while none does. before: the QP's pending count before a
 * change to it. Send lock held.
 */
void softrdma_qp_waiting_change(struct softrdma_qp *qp, uint32_t before)
{
	if (!before && qp->pending_count)
		__atomic_add_fetch(&softrdma_process.waiting_qps, 1, __ATOMIC_ACQ_REL);
	else if (before && !qp->pending_count)
		__atomic_sub_fetch(&softrdma_process.waiting_qps, 1, __ATOMIC_ACQ_REL);
}

/* Drops what is queued, with no completions (RESET, destroy). Send lock held. */
void softrdma_qp_send_discard(struct softrdma_qp *qp)
{
	uint32_t before = qp->pending_count;

	qp->pending_head = 0;
	qp->pending_count = 0;
	softrdma_qp_waiting_change(qp, before);
}

/* Capacities are reported as asked for, even past what posting accepts (as Apple's driver). */
struct ibv_qp *softrdma_create_qp(struct ibv_pd *ibv_pd, struct ibv_qp_init_attr *attr)
{
	struct softrdma_pd *pd = (struct softrdma_pd *) ibv_pd;
	struct softrdma_qp *qp;
	int ret;

	if (!attr)
		return softrdma_fail_null(EINVAL);
	ret = softrdma_qp_init_check(pd, attr);
	if (ret)
		return softrdma_fail_null(ret);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return softrdma_fail_null(ENOMEM);
	qp->pd = pd;
	qp->send_cq = (struct softrdma_cq *) attr->send_cq;
	qp->recv_cq = (struct softrdma_cq *) attr->recv_cq;
	qp->send_depth = softrdma_queue_depth(attr->cap.max_send_wr);
	qp->pending = calloc(qp->send_depth ? qp->send_depth : 1, sizeof(*qp->pending));
	ret = qp->pending ? softrdma_qp_insert(qp, attr) : ENOMEM;
	if (ret) {
		free(qp->pending);
		free(qp);
		return softrdma_fail_null(ret);
	}
	softrdma_qp_fill(qp, attr);
	pthread_mutex_init(&qp->send_lock, NULL);
	__atomic_add_fetch(&pd->children, 1, __ATOMIC_ACQ_REL);
	__atomic_add_fetch(&qp->send_cq->children, 1, __ATOMIC_ACQ_REL);
	__atomic_add_fetch(&qp->recv_cq->children, 1, __ATOMIC_ACQ_REL);
	softrdma_qp_list_add(qp);
	return &qp->ibv;
}

void softrdma_qp_release_locked(struct softrdma_segment *segment, uint32_t index)
{
	struct softrdma_shared_qp *shared = softrdma_table_slot(segment, &segment->qps, index);

	segment->devices[shared->device].qp_count--;
	softrdma_table_free(segment, &segment->qps, index);
}

int softrdma_destroy_qp(struct ibv_qp *ibv_qp)
{
	struct softrdma_qp *qp = (struct softrdma_qp *) ibv_qp;
	struct softrdma_segment *segment = softrdma_process.segment;

	if (!qp)
		return softrdma_fail(EINVAL);
	softrdma_qp_list_remove(qp);
	pthread_mutex_lock(&qp->send_lock);
	softrdma_qp_send_discard(qp);
	pthread_mutex_unlock(&qp->send_lock);
	softrdma_lock(segment);
	softrdma_qp_release_locked(segment, qp->index);
	softrdma_unlock(segment);
	__atomic_sub_fetch(&qp->recv_cq->children, 1, __ATOMIC_ACQ_REL);
	__atomic_sub_fetch(&qp->send_cq->children, 1, __ATOMIC_ACQ_REL);
	__atomic_sub_fetch(&qp->pd->children, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_destroy(&qp->send_lock);
	pthread_cond_destroy(&qp->ibv.cond);
	pthread_mutex_destroy(&qp->ibv.mutex);
	free(qp->pending);
	free(qp);
	return 0;
}

int softrdma_query_qp(struct ibv_qp *ibv_qp, struct ibv_qp_attr *attr, int attr_mask,
		      struct ibv_qp_init_attr *init_attr)
{
	struct softrdma_qp *qp = (struct softrdma_qp *) ibv_qp;
	enum ibv_qp_state state;

	if (!qp || !attr || !init_attr)
		return softrdma_fail(EINVAL);
	pthread_mutex_lock(&qp->send_lock);
	state = (enum ibv_qp_state) softrdma_qp_state(qp);
	*attr = qp->attr;
	pthread_mutex_unlock(&qp->send_lock);
	attr->qp_state = state;
	attr->cur_qp_state = state;
	attr->cap = qp->cap;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = qp->ibv.qp_context;
	init_attr->send_cq = qp->ibv.send_cq;
	init_attr->recv_cq = qp->ibv.recv_cq;
	init_attr->cap = qp->cap;
	init_attr->qp_type = qp->ibv.qp_type;
	init_attr->sq_sig_all = qp->sq_sig_all;
	qp->ibv.state = state;
	return 0;
}
