/*
 * softrdma_cq.c: completion queues. Each is a ring of struct ibv_wc in the
 * shared segment, since a sender in another process pushes the receive
 * completions of its target. Producers push under the segment lock. The
 * ring has one consumer, its owner process (whose pollers take turns): a
 * poll takes completions without the segment lock, so a target's polls do
 * not stall the senders writing into it. Polling a send completion retires
 * its QP's send queue slots, which only this process counts: under its own
 * lock, against QPs destroyed meanwhile. Polling a receive completion that
 * carries a small SEND's data places that data in the receive's buffers
 * (softrdma_layout.h). poll_cq, which also drives this process's
 * send queues, is softrdma_poll.c.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "softrdma/softrdma_internal.h"

static struct softrdma_shared_cq *softrdma_cq_shared(struct softrdma_cq *cq)
{
	struct softrdma_segment *segment = softrdma_process.segment;

	return softrdma_table_slot(segment, &segment->cqs, cq->index);
}

/* Completion channels and vectors are not emulated: polling is the only way. */
static int softrdma_cq_check(struct softrdma_context *context, int cqe,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	if (!context || cqe < 1 || cqe > softrdma_process.segment->limits.max_cqe ||
	    comp_vector != 0)
		return EINVAL;
	if (channel)
		return EOPNOTSUPP;
	return 0;
}

struct ibv_cq *softrdma_create_cq(struct ibv_context *ibv_context, int cqe, void *cq_context,
				  struct ibv_comp_channel *channel, int comp_vector)
{
	struct softrdma_context *context = (struct softrdma_context *) ibv_context;
	struct softrdma_segment *segment = softrdma_process.segment;
	struct softrdma_shared_cq *shared;
	struct softrdma_cq *cq;
	int index, ret;

	ret = softrdma_cq_check(context, cqe, channel, comp_vector);
	if (ret)
		return softrdma_fail_null(ret);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return softrdma_fail_null(ENOMEM);
	softrdma_lock(segment);
	index = softrdma_table_alloc(segment, &segment->cqs, softrdma_process.pid);
	if (index >= 0) {
		shared = softrdma_table_slot(segment, &segment->cqs, (uint32_t) index);
		shared->capacity = cqe;
	}
	softrdma_unlock(segment);
	if (index < 0) {
		free(cq);
		return softrdma_fail_null(ENOMEM);
	}
	cq->index = (uint32_t) index;
	cq->context = context;
	cq->ibv.context = ibv_context;
	cq->ibv.cq_context = cq_context;
	cq->ibv.cqe = cqe;
	cq->ibv.handle = cq->index;
	pthread_mutex_init(&cq->ibv.mutex, NULL);
	pthread_cond_init(&cq->ibv.cond, NULL);
	pthread_mutex_init(&cq->poll_lock, NULL);
	__atomic_add_fetch(&context->children, 1, __ATOMIC_ACQ_REL);
	return &cq->ibv;
}

void softrdma_cq_release_locked(struct softrdma_segment *segment, uint32_t index)
{
	softrdma_table_free(segment, &segment->cqs, index);
}

int softrdma_destroy_cq(struct ibv_cq *ibv_cq)
{
	struct softrdma_cq *cq = (struct softrdma_cq *) ibv_cq;
	struct softrdma_segment *segment = softrdma_process.segment;

	if (!cq)
		return softrdma_fail(EINVAL);
	if (__atomic_load_n(&cq->children, __ATOMIC_ACQUIRE))
		return softrdma_fail(EBUSY);
	softrdma_lock(segment);
	softrdma_cq_release_locked(segment, cq->index);
	softrdma_unlock(segment);
	pthread_mutex_destroy(&cq->poll_lock);
	pthread_cond_destroy(&cq->ibv.cond);
	pthread_mutex_destroy(&cq->ibv.mutex);
	__atomic_sub_fetch(&cq->context->children, 1, __ATOMIC_ACQ_REL);
	free(cq);
	return 0;
}

/* The CQ at cq_index, if it is in use: a QP's CQ index is read from shared memory. */
static struct softrdma_shared_cq *softrdma_cq_in_use_locked(struct softrdma_segment *segment,
							     int cq_index)
{
	struct softrdma_shared_cq *cq;

	if (cq_index < 0 || cq_index >= (int) SOFTRDMA_CQ_SLOTS)
		return NULL;
	cq = softrdma_table_slot(segment, &segment->cqs, (uint32_t) cq_index);
	return cq->slot.in_use ? cq : NULL;
}

/* Whether fewer than limit of cq's completions wait for its consumer. */
static bool softrdma_cq_behind_less_than_locked(struct softrdma_shared_cq *cq, uint64_t limit)
{
	if (cq->produced - cq->consumed_seen >= limit)
		cq->consumed_seen = __atomic_load_n(&cq->consumed, __ATOMIC_ACQUIRE);
	return cq->produced - cq->consumed_seen < limit;
}

bool softrdma_cq_payload_room_locked(struct softrdma_segment *segment, int cq_index)
{
	struct softrdma_shared_cq *cq = softrdma_cq_in_use_locked(segment, cq_index);

	return cq && softrdma_cq_behind_less_than_locked(cq, SOFTRDMA_PAYLOAD_SLOTS);
}

/*
 * A full CQ loses the completion and stays in error, as a real CQ overrun
 * does; its poller sees -EOVERFLOW once the ring is drained. So does a
 * payload whose slot still holds one not placed, which its sender's check
 * of the room (in the same pass under the lock) rules out.
 */
int softrdma_cq_push_locked(struct softrdma_segment *segment, int cq_index,
			    const struct ibv_wc *wc, uint32_t qp_index, bool retires,
			    uint64_t sequence, const struct softrdma_completion_payload *payload)
{
	struct softrdma_shared_cq *cq = softrdma_cq_in_use_locked(segment, cq_index);
	struct softrdma_shared_completion *entry;

	if (!cq)
		return -ENOENT;
	if (!softrdma_cq_behind_less_than_locked(cq, (uint64_t) cq->capacity) ||
	    (payload && !softrdma_cq_behind_less_than_locked(cq, SOFTRDMA_PAYLOAD_SLOTS))) {
		if (!cq->overflowed)
			FI_WARN(&bolt_prov, FI_LOG_CORE,
				"software device: CQ of %d entries overrun; completions lost\n",
				cq->capacity);
		cq->overflowed = 1;
		return -EOVERFLOW;
	}
	entry = &cq->ring[cq->produced % SOFTRDMA_CQ_RING];
	entry->wc = *wc;
	entry->qp_index = qp_index;
	entry->retires = retires;
	entry->sequence = sequence;
	entry->has_payload = payload != NULL;
	if (payload)
		memcpy(&cq->payloads[cq->produced % SOFTRDMA_PAYLOAD_SLOTS], payload,
		       offsetof(struct softrdma_completion_payload, data) + payload->length);
	__atomic_store_n(&cq->produced, cq->produced + 1, __ATOMIC_RELEASE);
	return 0;
}

/* The send queue slots up to entry's WR are free again, unless its QP is gone. */
static void softrdma_cq_retire(const struct softrdma_shared_completion *entry)
{
	struct softrdma_process *process = &softrdma_process;
	uint64_t retired = entry->sequence + 1, seen;
	struct softrdma_qp *qp;

	pthread_mutex_lock(&process->lock);
	qp = entry->qp_index < SOFTRDMA_QP_SLOTS ? process->qps_by_slot[entry->qp_index] : NULL;
	if (qp && qp->ibv.qp_num == entry->wc.qp_num) {
		/* Never back: RESET may have retired everything meanwhile. */
		seen = __atomic_load_n(&qp->send_retired, __ATOMIC_ACQUIRE);
		while (seen < retired &&
		       !__atomic_compare_exchange_n(&qp->send_retired, &seen, retired, false,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			;
	}
	pthread_mutex_unlock(&process->lock);
}

/* A receive completion's data, into the receive's buffers: this process's memory. */
static void softrdma_cq_place(const struct softrdma_completion_payload *payload)
{
	uint64_t offset = 0;

	/* The segment is shared memory: only what a payload can hold is placed. */
	for (uint32_t index = 0; index < payload->place_count && index < SOFTRDMA_MAX_SGE; index++) {
		if (payload->place[index].length > SOFTRDMA_COMPLETION_PAYLOAD - offset)
			break;
		memcpy((void *) (uintptr_t) payload->place[index].addr, payload->data + offset,
		       payload->place[index].length);
		offset += payload->place[index].length;
	}
}

/* Pops up to num_entries completions. */
static int softrdma_cq_pop(struct softrdma_shared_cq *cq, int num_entries, struct ibv_wc *wc)
{
	uint64_t produced = __atomic_load_n(&cq->produced, __ATOMIC_ACQUIRE);
	uint64_t consumed = cq->consumed;
	int count = 0;

	while (count < num_entries && consumed < produced) {
		const struct softrdma_shared_completion *entry = &cq->ring[consumed % SOFTRDMA_CQ_RING];

		wc[count++] = entry->wc;
		if (entry->has_payload)
			softrdma_cq_place(&cq->payloads[consumed % SOFTRDMA_PAYLOAD_SLOTS]);
		if (entry->retires)
			softrdma_cq_retire(entry);
		/* The producer may reuse the entry from here on. */
		__atomic_store_n(&cq->consumed, ++consumed, __ATOMIC_RELEASE);
	}
	return count;
}

/* Takes up to num_entries completions; -EOVERFLOW once an overrun CQ is drained. */
int softrdma_cq_take(struct softrdma_cq *cq, int num_entries, struct ibv_wc *wc)
{
	struct softrdma_shared_cq *shared = softrdma_cq_shared(cq);
	int count;

	if (__atomic_load_n(&shared->produced, __ATOMIC_ACQUIRE) ==
	    __atomic_load_n(&shared->consumed, __ATOMIC_ACQUIRE))
		return __atomic_load_n(&shared->overflowed, __ATOMIC_RELAXED) ? -EOVERFLOW : 0;
	pthread_mutex_lock(&cq->poll_lock);
	count = softrdma_cq_pop(shared, num_entries, wc);
	pthread_mutex_unlock(&cq->poll_lock);
	return count;
}
