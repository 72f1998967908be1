/*
 * softrdma_reap.c: what one process held in the segment goes back when it
 * detaches or is found dead, as the kernel frees a process's objects at its
 * exit: its MRs, QPs, CQs and staging channels, then its entry in the table
 * of processes. The segment (softrdma_segment.c) finds the dead but knows no
 * objects, so it calls this through the function its opener hands it
 * (softrdma_attach.c); a transfer that finds its target dead calls it too.
 * This file calls each object's release; none of them calls it.
 */
#include "softrdma/softrdma_internal.h"

void softrdma_release_owner_locked(struct softrdma_segment *segment, pid_t pid)
{
	for (uint32_t index = 0; index < segment->mrs.high_water; index++) {
		struct softrdma_shared_mr *mr = softrdma_table_slot(segment, &segment->mrs, index);

		if (mr->slot.in_use && mr->slot.owner == pid)
			softrdma_mr_release_locked(segment, index);
	}
	for (uint32_t index = 0; index < segment->qps.high_water; index++) {
		struct softrdma_shared_qp *qp = softrdma_table_slot(segment, &segment->qps, index);

		if (qp->slot.in_use && qp->slot.owner == pid)
			softrdma_qp_release_locked(segment, index);
	}
	for (uint32_t index = 0; index < segment->cqs.high_water; index++) {
		struct softrdma_shared_cq *cq = softrdma_table_slot(segment, &segment->cqs, index);

		if (cq->slot.in_use && cq->slot.owner == pid)
			softrdma_cq_release_locked(segment, index);
	}
	softrdma_channel_release_owner_locked(segment, pid);
	softrdma_process_forget_locked(segment, pid);
}
