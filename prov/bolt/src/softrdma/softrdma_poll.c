/*
 * softrdma_poll.c: poll_cq, the verbs call that moves this process's side of
 * the device along before it takes completions: it serves what other
 * processes staged for it (copy mode shm) and retries the WRs waiting in its
 * send queues, whose transfers complete into CQs. So it stands above both
 * the send path (softrdma_post.c) and the CQs (softrdma_cq.c).
 */
#include "softrdma/softrdma_internal.h"

int softrdma_poll_cq(struct ibv_cq *ibv_cq, int num_entries, struct ibv_wc *wc)
{
	struct softrdma_cq *cq = (struct softrdma_cq *) ibv_cq;

	if (!cq || num_entries < 0 || (num_entries && !wc))
		return -EINVAL;
	softrdma_fault_plan_tick();
	softrdma_service_poll();
	softrdma_progress_all();
	return softrdma_cq_take(cq, num_entries, wc);
}
