/*
 * softrdma_transfer.c: what the wire and the remote NIC do with one send WR,
 * done by the sender's process. Under the lock: the local keys, the route
 * (cables, ports, the target QP and its process), UC drops, the remote key or
 * the target's posted receive. Without it: the copy, straight into or out of
 * the target process (copy mode cma), or staged through the segment for the
 * target to finish (copy mode shm). Under the lock again: the completions at
 * both ends.
 *
 * On the way an RC QP reports failures to its sender (and goes to ERR); a UC
 * QP's message is just lost, and the sender completes successfully. Where
 * the target does not answer (no route, no such QP, not ready to receive,
 * its process dead, or in shm mode too slow to take the data) RC retries as
 * the IB transport does: retry_cnt times after the local ACK timeout, then
 * IBV_WC_RETRY_EXC_ERR. A cable cut while the data moved loses RC's
 * acknowledgement: the target has it, the sender retries (answered, once the
 * cable is back, without the target taking it again), and may see an error
 * for a message that arrived: the ambiguity a real link leaves to its users.
 * A cable that loses acknowledgements (softrdma_plan.c) does so to every
 * RC message.
 */
#include <string.h>

#include "softrdma/softrdma_internal.h"

enum softrdma_step {
	SOFTRDMA_STEP_CONTINUE,
	SOFTRDMA_STEP_STOP,     /* done: lost, or failed with sender_status */
	SOFTRDMA_STEP_WAIT,     /* RC: retry later */
};

struct softrdma_transfer {
	struct softrdma_qp *qp;
	struct softrdma_send_entry *entry;
	struct softrdma_shared_qp *source;
	bool rc;
	uint64_t length;
	struct iovec local[SOFTRDMA_MAX_SGE];
	int local_count;
	struct iovec remote[SOFTRDMA_MAX_SGE];
	int remote_count;
	uint32_t remote_keys[SOFTRDMA_MAX_SGE]; /* what covers each remote entry */
	int remote_access;      /* what those keys grant */
	uint32_t target_index;
	uint32_t target_qpn;
	uint32_t target_pd_id;
	pid_t target_pid;
	bool delivers;          /* data to copy, or an RC target to ask after */
	bool in_completion;     /* a small SEND: its data rides in the receive completion */
	bool has_receive;       /* a posted receive of the target was consumed */
	uint32_t receive_epoch; /* of the target's receive queue when it was taken */
	struct softrdma_shared_receive receive;
	enum ibv_wc_status sender_status;
	enum ibv_wc_status receiver_status;
};

/* IB's RNR NAK timer encoding (min_rnr_timer 0..31), in microseconds. */
static const uint32_t softrdma_rnr_timer_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
	163840, 245760, 327680, 491520,
};

/* RC tells the sender; UC loses the message without a word. */
static enum softrdma_step softrdma_transfer_fail(struct softrdma_transfer *transfer,
						 enum ibv_wc_status rc_status)
{
	if (transfer->rc)
		transfer->sender_status = rc_status;
	return SOFTRDMA_STEP_STOP;
}

static enum softrdma_step softrdma_transfer_local(struct softrdma_segment *segment,
						  struct softrdma_transfer *transfer)
{
	struct softrdma_send_entry *entry = transfer->entry;
	int access = entry->opcode == IBV_WR_RDMA_READ ? IBV_ACCESS_LOCAL_WRITE : 0;

	if (entry->inline_length) {
		transfer->local[0].iov_base = entry->inline_data;
		transfer->local[0].iov_len = entry->inline_length;
		transfer->local_count = 1;
		transfer->length = entry->inline_length;
		return SOFTRDMA_STEP_CONTINUE;
	}
	for (int index = 0; index < entry->num_sge; index++) {
		const struct ibv_sge *sge = &entry->sge[index];

		if (!sge->length)
			continue;
		if (!softrdma_mr_check_locked(segment, sge->lkey, transfer->qp->pd->pd_id, access,
					      sge->addr, sge->length)) {
			transfer->sender_status = IBV_WC_LOC_PROT_ERR;
			return SOFTRDMA_STEP_STOP;
		}
		transfer->local[transfer->local_count].iov_base = (void *) (uintptr_t) sge->addr;
		transfer->local[transfer->local_count++].iov_len = sge->length;
		transfer->length += sge->length;
	}
	if (transfer->length > SOFTRDMA_MAX_MESSAGE) {
		transfer->sender_status = IBV_WC_LOC_LEN_ERR;
		return SOFTRDMA_STEP_STOP;
	}
	return SOFTRDMA_STEP_CONTINUE;
}

static uint64_t softrdma_packet_count(uint64_t length, uint32_t mtu)
{
	return length ? (length + mtu - 1) / mtu : 1;
}

/* IB's local ACK timeout, 4.096 us * 2^timeout; 0 means wait forever. */
static uint64_t softrdma_ack_timeout_ns(uint8_t timeout)
{
	return timeout ? 4096ull << timeout : 0;
}

/* Waiting forever is retrying forever, at this modest pace. */
#define SOFTRDMA_FOREVER_PACE_NS (4096ull << 14)

/* UC has no ACK timeout: a target that takes nothing for this long loses the message. */
#define SOFTRDMA_UC_STALL_NS 100000000ull

/* The target did not answer: UC loses the message, RC tries again later. */
static enum softrdma_step softrdma_transfer_unanswered(struct softrdma_transfer *transfer)
{
	struct softrdma_send_entry *entry = transfer->entry;
	uint64_t timeout_ns = softrdma_ack_timeout_ns(transfer->qp->attr.timeout);

	if (!transfer->rc)
		return SOFTRDMA_STEP_STOP;
	if (timeout_ns && !entry->retries_left) {
		transfer->sender_status = IBV_WC_RETRY_EXC_ERR;
		return SOFTRDMA_STEP_STOP;
	}
	if (timeout_ns)
		entry->retries_left--;
	else
		timeout_ns = SOFTRDMA_FOREVER_PACE_NS;
	entry->next_attempt_ns = softrdma_now_ns() + timeout_ns;
	return SOFTRDMA_STEP_WAIT;
}

/* The target's process died: what it held is released, as the kernel would. */
static enum softrdma_step softrdma_transfer_target_dead(struct softrdma_segment *segment,
							struct softrdma_transfer *transfer,
							pid_t owner)
{
	softrdma_release_owner_locked(segment, owner);
	return softrdma_transfer_unanswered(transfer);
}

/* Whether the cable between the sender's device and its QP's remote one carries now. */
static bool softrdma_transfer_reachable(const struct softrdma_segment *segment,
					const struct softrdma_transfer *transfer)
{
	return softrdma_device_reachable(segment, transfer->source->device, transfer->source->remote_device);
}

/* Whether the target's acknowledgement comes back: the cable carries, and carries answers. */
static bool softrdma_transfer_answered(const struct softrdma_segment *segment,
				       const struct softrdma_transfer *transfer)
{
	return softrdma_transfer_reachable(segment, transfer) &&
	       !segment->devices[transfer->source->device].acks_lost;
}

/* Cables, ports, the target QP, its process; then UC's packet drops. */
static enum softrdma_step softrdma_transfer_route(struct softrdma_segment *segment,
						  struct softrdma_transfer *transfer)
{
	const struct softrdma_shared_qp *source = transfer->source;
	struct softrdma_shared_qp *target;

	if (!softrdma_transfer_reachable(segment, transfer))
		return softrdma_transfer_unanswered(transfer);
	target = softrdma_table_lookup(segment, &segment->qps, source->remote_qpn);
	if (!target || target->device != source->remote_device || target->type != source->type)
		return softrdma_transfer_unanswered(transfer);
	/*
	 * A copy finds a dead target by itself (ESRCH); asking the kernel here,
	 * under the device lock, for every message would hold the other processes
	 * off for a system call. Only a transfer with no bytes to move must ask.
	 */
	if (!transfer->length && target->slot.owner != softrdma_process.pid &&
	    !softrdma_process_exists(target->slot.owner))
		return softrdma_transfer_target_dead(segment, transfer, target->slot.owner);
	if (target->state != IBV_QPS_RTR && target->state != IBV_QPS_RTS)
		return softrdma_transfer_unanswered(transfer);
	/* An RC responder answers only the QP it is connected to. */
	if (transfer->rc && (target->remote_qpn != source->qpn ||
			     target->remote_device != source->device))
		return softrdma_transfer_unanswered(transfer);
	transfer->target_index = source->remote_qpn & (segment->qps.capacity - 1);
	transfer->target_qpn = target->qpn;
	transfer->target_pd_id = target->pd_id;
	transfer->target_pid = target->slot.owner;
	if (!transfer->rc &&
	    softrdma_drop_message_locked(segment, softrdma_packet_count(transfer->length,
									source->path_mtu_bytes)))
		return SOFTRDMA_STEP_STOP;
	return SOFTRDMA_STEP_CONTINUE;
}

static struct softrdma_shared_qp *softrdma_transfer_target(struct softrdma_segment *segment,
							   const struct softrdma_transfer *transfer)
{
	return softrdma_table_slot(segment, &segment->qps, transfer->target_index);
}

/* RDMA write or read: the rkey must be the target's, with the right, covering the range. */
static enum softrdma_step softrdma_transfer_remote_memory(struct softrdma_segment *segment,
							  struct softrdma_transfer *transfer,
							  int access)
{
	const struct softrdma_shared_qp *target = softrdma_transfer_target(segment, transfer);
	const struct softrdma_send_entry *entry = transfer->entry;

	/* A zero-length request needs no valid address or rkey (IB C9-88; rxe does the same). */
	if (!transfer->length)
		return SOFTRDMA_STEP_CONTINUE;
	if (!(target->access_flags & (uint32_t) access) ||
	    !softrdma_mr_check_locked(segment, entry->rkey, target->pd_id, access,
				      entry->remote_addr, transfer->length))
		return softrdma_transfer_fail(transfer, IBV_WC_REM_ACCESS_ERR);
	if (transfer->length) {
		transfer->remote[0].iov_base = (void *) (uintptr_t) entry->remote_addr;
		transfer->remote[0].iov_len = transfer->length;
		transfer->remote_keys[0] = entry->rkey;
		transfer->remote_access = access;
		transfer->remote_count = 1;
		transfer->delivers = true;
	}
	return SOFTRDMA_STEP_CONTINUE;
}

/*
 * RC retries per the QP's rnr_retry (7: forever) after the target's RNR
 * timer; unless the target is a zombie, which would never post a receive
 * (the cheap liveness check of the route does not see zombies).
 */
static enum softrdma_step softrdma_transfer_not_ready(struct softrdma_segment *segment,
						      struct softrdma_transfer *transfer,
						      const struct softrdma_shared_qp *target)
{
	struct softrdma_send_entry *entry = transfer->entry;

	if (!transfer->rc || !segment->limits.receiver_not_ready_retry)
		return SOFTRDMA_STEP_STOP; /* no retry: the message is lost */
	if (transfer->target_pid != softrdma_process.pid &&
	    !softrdma_process_alive(transfer->target_pid))
		return softrdma_transfer_target_dead(segment, transfer, transfer->target_pid);
	if (!entry->rnr_retries_left) {
		transfer->sender_status = IBV_WC_RNR_RETRY_EXC_ERR;
		return SOFTRDMA_STEP_STOP;
	}
	if (entry->rnr_retries_left != SOFTRDMA_RNR_RETRY_FOREVER)
		entry->rnr_retries_left--;
	entry->next_attempt_ns = softrdma_now_ns() +
				 softrdma_rnr_timer_us[target->min_rnr_timer % 32] * 1000ull;
	return SOFTRDMA_STEP_WAIT;
}

static enum softrdma_step softrdma_transfer_take_receive(struct softrdma_segment *segment,
							 struct softrdma_transfer *transfer)
{
	struct softrdma_shared_qp *target = softrdma_transfer_target(segment, transfer);

	if (!softrdma_receive_take_locked(target, &transfer->receive, &transfer->receive_epoch))
		return softrdma_transfer_not_ready(segment, transfer, target);
	transfer->has_receive = true;
	return SOFTRDMA_STEP_CONTINUE;
}

static uint64_t softrdma_receive_capacity(const struct softrdma_shared_receive *receive)
{
	uint64_t total = 0;

	for (uint32_t index = 0; index < receive->num_sge; index++)
		total += receive->sge[index].length;
	return total;
}

static uint64_t softrdma_frame_count(uint64_t length)
{
	return length ? (length + SOFTRDMA_FRAME_BYTES - 1) / SOFTRDMA_FRAME_BYTES : 1;
}

static enum softrdma_step softrdma_transfer_receive_error(struct softrdma_transfer *transfer,
							  enum ibv_wc_status receiver_status,
							  enum ibv_wc_status rc_status)
{
	transfer->receiver_status = receiver_status;
	return softrdma_transfer_fail(transfer, rc_status);
}

/* A receive that cannot take its SEND, as the profile's device reports it. */
static enum softrdma_step softrdma_transfer_bad_receive(const struct softrdma_segment *segment,
							struct softrdma_transfer *transfer,
							enum ibv_wc_status receiver_status,
							enum ibv_wc_status rc_status)
{
	if (segment->limits.receive_errors_as_malformed_wqe)
		return softrdma_transfer_receive_error(transfer, IBV_WC_LOC_QP_OP_ERR,
						       IBV_WC_REM_OP_ERR);
	return softrdma_transfer_receive_error(transfer, receiver_status, rc_status);
}

/* A SEND's data into the receive it consumed: sizes, frames, the receive's keys. */
static enum softrdma_step softrdma_transfer_scatter(struct softrdma_segment *segment,
						    struct softrdma_transfer *transfer)
{
	const struct softrdma_shared_qp *target = softrdma_transfer_target(segment, transfer);
	const struct softrdma_shared_receive *receive = &transfer->receive;
	uint64_t capacity, left = transfer->length;

	/* The segment is shared memory: a count that overruns our arrays is a bad WQE. */
	if (receive->num_sge > SOFTRDMA_MAX_SGE)
		return softrdma_transfer_bad_receive(segment, transfer, IBV_WC_LOC_QP_OP_ERR,
						     IBV_WC_REM_OP_ERR);
	capacity = softrdma_receive_capacity(receive);
	if (transfer->length > capacity ||
	    (segment->limits.frames_must_match &&
	     softrdma_frame_count(transfer->length) != softrdma_frame_count(capacity)))
		return softrdma_transfer_bad_receive(segment, transfer, IBV_WC_LOC_LEN_ERR,
						     IBV_WC_REM_INV_REQ_ERR);
	for (uint32_t index = 0; index < receive->num_sge && left; index++) {
		const struct ibv_sge *sge = &receive->sge[index];
		uint64_t take = sge->length < left ? sge->length : left;

		if (!take)
			continue;
		if (!softrdma_mr_check_locked(segment, sge->lkey, target->pd_id,
					      IBV_ACCESS_LOCAL_WRITE, sge->addr, take))
			return softrdma_transfer_bad_receive(segment, transfer,
							     IBV_WC_LOC_PROT_ERR, IBV_WC_REM_OP_ERR);
		transfer->remote[transfer->remote_count].iov_base = (void *) (uintptr_t) sge->addr;
		transfer->remote[transfer->remote_count].iov_len = take;
		transfer->remote_keys[transfer->remote_count++] = sge->lkey;
		left -= take;
	}
	transfer->remote_access = IBV_ACCESS_LOCAL_WRITE;
	/*
	 * Where the target's anchor cannot tell an RC sender that the target
	 * runs, the copy does (softrdma_layout.h).
	 */
	transfer->in_completion = transfer->length &&
				  transfer->length <= SOFTRDMA_COMPLETION_PAYLOAD &&
				  (!transfer->rc || transfer->target_pid == softrdma_process.pid ||
				   softrdma_anchor_holds_locked(segment, transfer->target_pid)) &&
				  softrdma_cq_payload_room_locked(segment, target->recv_cq);
	transfer->delivers = transfer->length > 0 && !transfer->in_completion;
	return SOFTRDMA_STEP_CONTINUE;
}

static enum softrdma_step softrdma_transfer_operation(struct softrdma_segment *segment,
						      struct softrdma_transfer *transfer)
{
	enum softrdma_step step;

	switch (transfer->entry->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		step = softrdma_transfer_take_receive(segment, transfer);
		return step == SOFTRDMA_STEP_CONTINUE ?
		       softrdma_transfer_scatter(segment, transfer) : step;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		step = softrdma_transfer_remote_memory(segment, transfer, IBV_ACCESS_REMOTE_WRITE);
		return step == SOFTRDMA_STEP_CONTINUE ?
		       softrdma_transfer_take_receive(segment, transfer) : step;
	case IBV_WR_RDMA_WRITE:
		return softrdma_transfer_remote_memory(segment, transfer, IBV_ACCESS_REMOTE_WRITE);
	case IBV_WR_RDMA_READ:
		return softrdma_transfer_remote_memory(segment, transfer, IBV_ACCESS_REMOTE_READ);
	default: /* post_send let no other opcode in */
		transfer->sender_status = IBV_WC_LOC_QP_OP_ERR;
		return SOFTRDMA_STEP_STOP;
	}
}

static enum softrdma_step softrdma_transfer_prepare_locked(struct softrdma_segment *segment,
							   struct softrdma_transfer *transfer)
{
	enum softrdma_step step;

	if (transfer->source->state == IBV_QPS_ERR) {
		transfer->sender_status = IBV_WC_WR_FLUSH_ERR;
		return SOFTRDMA_STEP_STOP;
	}
	/* Its ack was lost: a retry that gets through is answered, the target takes nothing again. */
	if (transfer->entry->delivered)
		return softrdma_transfer_answered(segment, transfer) ?
		       SOFTRDMA_STEP_STOP : softrdma_transfer_unanswered(transfer);
	step = softrdma_transfer_local(segment, transfer);
	if (step == SOFTRDMA_STEP_CONTINUE)
		step = softrdma_transfer_route(segment, transfer);
	if (step == SOFTRDMA_STEP_CONTINUE)
		step = softrdma_transfer_operation(segment, transfer);
	return step;
}

static uint64_t softrdma_transfer_stall_ns(const struct softrdma_transfer *transfer)
{
	uint64_t timeout_ns = softrdma_ack_timeout_ns(transfer->qp->attr.timeout);

	if (!transfer->rc)
		return SOFTRDMA_UC_STALL_NS;
	return timeout_ns ? timeout_ns : SOFTRDMA_FOREVER_PACE_NS;
}

/* Through the segment, for the target to finish (copy mode shm). */
static int softrdma_transfer_stage(const struct softrdma_transfer *transfer, bool to_remote)
{
	struct softrdma_stage stage = {
		.target_pid = transfer->target_pid,
		.to_target = to_remote,
		.local = transfer->local,
		.local_count = transfer->local_count,
		.remote = transfer->remote,
		.remote_keys = transfer->remote_keys,
		.remote_count = transfer->remote_count,
		.pd_id = transfer->target_pd_id,
		.access = transfer->remote_access,
		.length = transfer->length,
		.stall_ns = softrdma_transfer_stall_ns(transfer),
	};

	return softrdma_stage_copy(&stage);
}

/* Within this process by memcpy, by cross-memory attach, or staged. */
static int softrdma_transfer_copy(const struct softrdma_transfer *transfer)
{
	bool to_remote = transfer->entry->opcode != IBV_WR_RDMA_READ;

	if (transfer->target_pid != softrdma_process.pid &&
	    softrdma_process.copy_mode == SOFTRDMA_COPY_SHM)
		return softrdma_transfer_stage(transfer, to_remote);
	return softrdma_copy(transfer->target_pid, to_remote, transfer->local,
			     transfer->local_count, transfer->remote, transfer->remote_count);
}

/*
 * The target took too long: the receive the message took goes back to the
 * head of its queue (a UC responder reuses the WQE of a message it lost; an
 * RC retransmission lands in it again), and the target did not answer.
 */
static enum softrdma_step softrdma_transfer_stalled_locked(struct softrdma_segment *segment,
							   struct softrdma_transfer *transfer)
{
	if (transfer->has_receive)
		softrdma_receive_give_back_locked(segment, transfer->target_index,
						  transfer->target_qpn, transfer->receive_epoch,
						  &transfer->receive);
	transfer->has_receive = false;
	return softrdma_transfer_unanswered(transfer);
}

static enum ibv_wc_opcode softrdma_send_wc_opcode(enum ibv_wr_opcode opcode)
{
	switch (opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	default:
		return IBV_WC_SEND;
	}
}

/* A small SEND's data and where the receive puts it, for its receive completion. */
static void softrdma_transfer_payload(const struct softrdma_transfer *transfer,
				      struct softrdma_completion_payload *payload)
{
	uint64_t offset = 0;

	for (int index = 0; index < transfer->local_count; index++) {
		memcpy(payload->data + offset, transfer->local[index].iov_base,
		       transfer->local[index].iov_len);
		offset += transfer->local[index].iov_len;
	}
	payload->length = (uint32_t) offset;
	payload->place_count = (uint32_t) transfer->remote_count;
	for (int index = 0; index < transfer->remote_count; index++) {
		payload->place[index].addr = (uintptr_t) transfer->remote[index].iov_base;
		payload->place[index].length = transfer->remote[index].iov_len;
	}
}

static void softrdma_transfer_complete_receive_locked(struct softrdma_segment *segment,
						      struct softrdma_transfer *transfer)
{
	const struct softrdma_send_entry *entry = transfer->entry;
	bool with_imm = entry->opcode == IBV_WR_SEND_WITH_IMM ||
			entry->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	struct ibv_wc wc = {
		.wr_id = transfer->receive.wr_id,
		.status = transfer->receiver_status,
		.opcode = entry->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ?
			  IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
		.byte_len = transfer->receiver_status == IBV_WC_SUCCESS ?
			    (uint32_t) transfer->length : 0,
		.imm_data = with_imm ? entry->imm_data : 0,
		.wc_flags = with_imm ? IBV_WC_WITH_IMM : 0,
		.src_qp = transfer->source->qpn,
	};
	bool carries = transfer->in_completion && transfer->receiver_status == IBV_WC_SUCCESS;
	struct softrdma_completion_payload payload;

	if (carries)
		softrdma_transfer_payload(transfer, &payload);
	/* The target may have been destroyed or reset while the data was copied. */
	softrdma_receive_finish_locked(segment, transfer->target_index, transfer->target_qpn,
				       transfer->receive_epoch, &wc, carries ? &payload : NULL);
}

static void softrdma_transfer_complete_locked(struct softrdma_segment *segment,
					      struct softrdma_transfer *transfer)
{
	const struct softrdma_send_entry *entry = transfer->entry;
	bool failed = transfer->sender_status != IBV_WC_SUCCESS;

	if (transfer->has_receive)
		softrdma_transfer_complete_receive_locked(segment, transfer);
	if (failed || (entry->send_flags & IBV_SEND_SIGNALED) || transfer->qp->sq_sig_all) {
		struct ibv_wc wc = {
			.wr_id = entry->wr_id,
			.status = transfer->sender_status,
			.opcode = softrdma_send_wc_opcode(entry->opcode),
			.byte_len = (uint32_t) transfer->length,
			.qp_num = transfer->source->qpn,
		};

		softrdma_cq_push_locked(segment, transfer->source->send_cq, &wc,
					transfer->qp->index, true, entry->sequence, NULL);
	}
	if (failed && transfer->sender_status != IBV_WC_WR_FLUSH_ERR)
		softrdma_qp_enter_error_locked(segment, transfer->qp->index);
}

/*
 * What the copy's result means, under the lock. CONTINUE: copied, or failed
 * with the statuses set (the target's memory is gone). A dead target is
 * released, as the kernel would, and does not answer; so does one that did
 * not take the data in time, or left no staging channel free.
 */
static enum softrdma_step softrdma_transfer_copied_locked(struct softrdma_segment *segment,
							  struct softrdma_transfer *transfer,
							  int copy_result)
{
	bool is_send = transfer->entry->opcode == IBV_WR_SEND ||
		       transfer->entry->opcode == IBV_WR_SEND_WITH_IMM;

	switch (copy_result) {
	case 0:
		return SOFTRDMA_STEP_CONTINUE;
	case -ETIMEDOUT:
	case -EBUSY:
		return softrdma_transfer_stalled_locked(segment, transfer);
	case -ESRCH:
		/* The receive it took went with the target's other resources. */
		transfer->has_receive = false;
		return softrdma_transfer_target_dead(segment, transfer, transfer->target_pid);
	default:
		FI_WARN(&bolt_prov, FI_LOG_CORE,
			"software device: copy to or from process %d failed: %s\n",
			transfer->target_pid, strerror(-copy_result));
		softrdma_transfer_receive_error(transfer, IBV_WC_LOC_PROT_ERR,
						is_send ? IBV_WC_REM_OP_ERR : IBV_WC_REM_ACCESS_ERR);
		return SOFTRDMA_STEP_CONTINUE;
	}
}

/*
 * RC, the data in place: if the cable went meanwhile (or loses answers), its
 * acknowledgement went with it. The target completes; the sender waits as
 * for no answer.
 */
static enum softrdma_step softrdma_transfer_acknowledge_locked(struct softrdma_segment *segment,
							       struct softrdma_transfer *transfer)
{
	if (!transfer->rc || transfer->sender_status != IBV_WC_SUCCESS ||
	    transfer->receiver_status != IBV_WC_SUCCESS ||
	    softrdma_transfer_answered(segment, transfer))
		return SOFTRDMA_STEP_CONTINUE;
	if (transfer->has_receive) {
		softrdma_transfer_complete_receive_locked(segment, transfer);
		transfer->has_receive = false;
	}
	transfer->entry->delivered = true;
	FI_INFO(&bolt_prov, FI_LOG_CORE, "software device: QP %u's cable went while its data moved: "
		"the data landed, its acknowledgement is lost\n", transfer->source->qpn);
	return softrdma_transfer_unanswered(transfer);
}

/* The copy, with no lock held, then the completions; WAIT: RC tries it again later. */
static enum softrdma_step softrdma_transfer_deliver(struct softrdma_segment *segment,
						    struct softrdma_transfer *transfer)
{
	int copy_result = softrdma_transfer_copy(transfer);
	enum softrdma_step step;

	softrdma_lock(segment);
	step = softrdma_transfer_copied_locked(segment, transfer, copy_result);
	if (step == SOFTRDMA_STEP_CONTINUE)
		step = softrdma_transfer_acknowledge_locked(segment, transfer);
	if (step != SOFTRDMA_STEP_WAIT)
		softrdma_transfer_complete_locked(segment, transfer);
	softrdma_unlock(segment);
	return step;
}

enum softrdma_transfer_outcome softrdma_transfer_execute(struct softrdma_qp *qp,
							 struct softrdma_send_entry *entry)
{
	struct softrdma_segment *segment = softrdma_process.segment;
	struct softrdma_transfer transfer = {
		.qp = qp,
		.entry = entry,
		.source = softrdma_qp_shared(qp),
		.rc = qp->ibv.qp_type == IBV_QPT_RC,
		.sender_status = IBV_WC_SUCCESS,
		.receiver_status = IBV_WC_SUCCESS,
	};
	enum softrdma_step step;

	softrdma_lock(segment);
	step = softrdma_transfer_prepare_locked(segment, &transfer);
	if (step == SOFTRDMA_STEP_STOP)
		transfer.delivers = false;
	/* Nothing to copy outside the lock: in place already, and answered or not. */
	if (step == SOFTRDMA_STEP_CONTINUE && !transfer.delivers)
		step = softrdma_transfer_acknowledge_locked(segment, &transfer);
	if (step != SOFTRDMA_STEP_WAIT && !transfer.delivers)
		softrdma_transfer_complete_locked(segment, &transfer);
	softrdma_unlock(segment);
	if (step != SOFTRDMA_STEP_WAIT && transfer.delivers)
		step = softrdma_transfer_deliver(segment, &transfer);
	return step == SOFTRDMA_STEP_WAIT ? SOFTRDMA_TRANSFER_WAIT : SOFTRDMA_TRANSFER_DONE;
}
