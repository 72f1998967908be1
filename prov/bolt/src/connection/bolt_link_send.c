/*
 * bolt_link_send.c: sending on the control rail. A message goes out only
 * when the peer has a receive posted for it (a credit: UC loses a SEND that
 * finds none), the link's send queue has room and, on UC, the connection's
 * window of unacknowledged messages (bolt_retransmit.c). The header's
 * transport fields (slot, credits given back, sequence, link sequence,
 * acknowledgement) are filled here; what the message says is its owner's.
 * A send's completion returns its buffer and the room it took, then hands
 * the connection back to its owner.
 */
#include <string.h>

#include "connection/bolt_link_move.h"

/*
 * Room on the link's send queue, and more credits than spare (any,
 * without_credit); passing: for a message without a sequence number, which
 * need not wait for what a move sends again.
 */
static bool bolt_link_has_room(const struct bolt_connection *connection, uint32_t spare, int slots,
			       bool without_credit, bool passing)
{
	const struct bolt_domain *domain = connection->manager->domain;
	const struct bolt_link *link = connection->link;

	return connection->state == BOLT_CONNECTION_ESTABLISHED && bolt_link_move_may_send(link, passing) &&
	       link->outstanding_sends + slots <= (int) domain->primary.budget.queue_depth &&
	       (without_credit || (int64_t) link->send_credits > (int64_t) spare);
}

bool bolt_link_can_resend(const struct bolt_connection *connection)
{
	return bolt_link_has_room(connection, 0, 1, false, false);
}

bool bolt_link_can_write(const struct bolt_connection *connection)
{
	return bolt_link_has_room(connection, BOLT_LINK_REPOST_BATCH, 1, false, false);
}

bool bolt_link_can_send(const struct bolt_connection *connection, uint32_t spare, int slots)
{
	return bolt_link_has_room(connection, spare, slots, false, false) &&
	       bolt_retransmit_has_room(connection);
}

bool bolt_link_can_send_again(const struct bolt_connection *connection, int slots, bool takes_receive)
{
	return bolt_link_has_room(connection, 0, slots, !takes_receive, true);
}

bool bolt_link_numbered(const struct bolt_connection *connection, enum bolt_wire_op op)
{
	return op != BOLT_WIRE_CREDIT &&
	       (bolt_connection_unreliable(connection) ||
		(op != BOLT_WIRE_STRIPE_KEY_ASK && op != BOLT_WIRE_STRIPE_KEY));
}

bool bolt_link_can_send_op(const struct bolt_connection *connection, enum bolt_wire_op op, uint32_t spare,
			   int slots)
{
	if (bolt_link_numbered(connection, op))
		return bolt_link_can_send(connection, spare, slots);
	return bolt_link_has_room(connection, spare, slots, false, true);
}

void bolt_link_frame(struct bolt_connection *connection, struct bolt_wire_header *header,
		     enum bolt_wire_op op, size_t payload_length)
{
	memset(header, 0, sizeof(*header));
	header->op = (uint8_t) op;
	header->payload_length = (uint16_t) payload_length;
	header->slot = connection->slot;
	header->slot_nonce = connection->slot_nonce;
	header->credits = (uint16_t) connection->link->credits_given;
	connection->link->credits_urgent = false;
	/* Acknowledgements and credits are no message of their own: never resent, no number. */
	header->sequence = bolt_link_numbered(connection, op) ? connection->send_sequence++ :
								connection->send_sequence;
	connection->link->credits_to_return = 0;
}

/*
 * The header wr sends from record's buffer (a message, or one written whole
 * into a bounce buffer), or NULL: a write of the application's data, a probe.
 */
static struct bolt_wire_header *bolt_link_header_of(struct bolt_domain *domain,
						    const struct bolt_control_buffer *record,
						    const struct ibv_send_wr *wr)
{
	bool bounce = wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM &&
		      (wr->imm_data & (BOLT_IMMEDIATE_WRITE_BACK | BOLT_IMMEDIATE_GRANTED |
				       BOLT_IMMEDIATE_ID)) == BOLT_IMMEDIATE_BOUNCE;

	if ((wr->opcode != IBV_WR_SEND && !bounce) || wr->num_sge < 1 ||
	    wr->sg_list[0].addr != (uintptr_t) bolt_control_buffer_data(domain, record) ||
	    wr->sg_list[0].length < sizeof(struct bolt_wire_header))
		return NULL;
	return (struct bolt_wire_header *) bolt_control_buffer_data(domain, record);
}

/*
 * What a header says of the link and the connection as it goes, the latest:
 * its place among the link's transmissions, the credits given back, what
 * arrived; on UC a message is kept to be sent again.
 */
static bool bolt_link_stamp(struct bolt_connection *connection, struct bolt_wire_header *header,
			    const struct ibv_send_wr *wr)
{
	struct bolt_link *link = connection->link;

	header->link_sequence = link->transmissions;
	header->credits = (uint16_t) link->credits_given;
	link->credits_to_return = 0;
	link->credits_urgent = false;
	bolt_retransmit_acknowledging(connection, header);
	if (header->op == BOLT_WIRE_CREDIT || !bolt_connection_unreliable(connection) ||
	    connection->retransmit.resending)
		return true;
	return bolt_retransmit_keep(connection, header, wr);
}

/* The RDMA write record posts (before its SEND, or alone), but for its keys: a move posts it again. */
static void bolt_link_keep_write(struct bolt_control_buffer *record, const struct ibv_send_wr *write)
{
	struct bolt_posted_write *kept = &record->write;

	kept->present = write && write->num_sge == 1 &&
			(write->opcode == IBV_WR_RDMA_WRITE || write->opcode == IBV_WR_RDMA_WRITE_WITH_IMM);
	if (!kept->present)
		return;
	kept->opcode = write->opcode;
	kept->immediate = write->imm_data;
	kept->address = write->sg_list[0].addr;
	kept->length = write->sg_list[0].length;
	kept->remote_address = write->wr.rdma.remote_addr;
}

bool bolt_link_post(struct bolt_connection *connection, struct bolt_control_buffer *record,
		    struct ibv_send_wr *wr, struct ibv_send_wr *write,
		    void (*handle)(struct bolt_work_completion *, const struct ibv_wc *))
{
	struct bolt_domain *domain = connection->manager->domain;
	struct bolt_link *link = connection->link;
	struct ibv_send_wr *bad_wr;
	int ret;

	struct bolt_wire_header *header = bolt_link_header_of(domain, record, wr);

	wr->wr_id = (uintptr_t) &record->work;
	wr->send_flags = IBV_SEND_SIGNALED;
	if (header && !bolt_link_stamp(connection, header, wr)) {
		bolt_control_buffer_put(domain, record);
		bolt_connection_fail(connection, FI_ENOMEM, "no memory to keep a message to send again");
		return false;
	}
	record->work.handle = handle;
	record->message_length = header && wr->opcode == IBV_WR_SEND && wr->num_sge == 1 ?
				 wr->sg_list[0].length : 0;
	bolt_link_keep_write(record, write ? write : header ? NULL : wr);
	record->link_sequence = link->transmissions;
	record->link = link;
	record->connection = connection;
	record->posted = true;
	if (write)
		write->next = wr;
	ret = domain->fabric->verbs.post_send(link->qp, write ? write : wr, &bad_wr);
	/* A write that went before a refused request still takes its place on the queue. */
	if (write && (!ret || bad_wr != write))
		link->outstanding_sends++;
	if (ret) {
		bolt_control_buffer_put(domain, record);
		bolt_link_fail(link, FI_EIO, strerror(ret));
		return false;
	}
	link->outstanding_sends++;
	/* Only a SEND, or a write with immediate data, takes a receive of the peer's. */
	if (wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_READ) {
		link->send_credits--;
		link->transmissions++;
	}
	return true;
}

bool bolt_link_post_buffer(struct bolt_connection *connection, struct bolt_control_buffer *record,
			   size_t length, struct ibv_send_wr *write,
			   void (*handle)(struct bolt_work_completion *, const struct ibv_wc *))
{
	struct bolt_domain *domain = connection->manager->domain;
	struct ibv_sge sge = {
		.addr = (uintptr_t) bolt_control_buffer_data(domain, record),
		.length = (uint32_t) length,
		.lkey = connection->link->port->control_mr->lkey,
	};
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND };

	return bolt_link_post(connection, record, &wr, write, handle);
}

struct bolt_connection *bolt_link_send_completed(struct bolt_control_buffer *record,
						 const struct ibv_wc *wc)
{
	struct bolt_connection *connection = record->connection;
	struct bolt_link *link = record->link;
	int send_slots = record->send_slots, rail = record->data_rail;
	struct bolt_domain *domain;

	/*
	 * A send can fail before its port's event is read (rxe fails it with a
	 * local QP operation error once the card went down): the events first,
	 * which move the link if its port is down.
	 */
	if (link && link->qp && !link->successor && !link->probing && wc->status != IBV_WC_SUCCESS &&
	    wc->status != IBV_WC_WR_FLUSH_ERR)
		bolt_data_rail_watch_ports(link->domain);
	/* An RC link whose path failed (its retries ran out) moves to another port, if there is one. */
	if (link && link->qp && !link->successor && !link->probing &&
	    wc->status == IBV_WC_RETRY_EXC_ERR)
		bolt_link_move_start(link, link->domain->fabric->verbs.wc_status_str(wc->status));
	/* Sent on a link that moved away: sent again, or done. */
	if (link && link->successor)
		return bolt_link_move_send_completed(record, wc);
	/* A control rail send retires entries of its link's queue, a stripe one of its rail's. */
	if (link) {
		domain = link->domain;
		bolt_control_buffer_put(domain, record);
		if (!link->qp)
			return NULL;
		link->outstanding_sends -= send_slots;
		/* Room for what a move sends again. */
		if (link->predecessor)
			bolt_link_move_resend(link);
		/* A probe to a port that does not meet ours fails on RC: the answer says so. */
		if (wc->status != IBV_WC_SUCCESS && link->probing)
			return NULL;
		if (wc->status != IBV_WC_SUCCESS) {
			bolt_link_fail(link, FI_EIO, domain->fabric->verbs.wc_status_str(wc->status));
			return NULL;
		}
		/* Its connection left the link: the link's others may use the room. */
		if (!connection) {
			bolt_link_progress(link);
			return NULL;
		}
	} else {
		domain = connection->manager->domain;
		bolt_control_buffer_put(domain, record);
	}
	/* Counted back first: the rail it brings back into use may fail the connection. */
	if (rail >= 0)
		bolt_data_rail_send_returned(connection, rail);
	/* A failed connection has already ended its operations. */
	if (connection->state == BOLT_CONNECTION_FAILED)
		return NULL;
	if (wc->status != IBV_WC_SUCCESS) {
		bolt_connection_fail(connection, FI_EIO, domain->fabric->verbs.wc_status_str(wc->status));
		return NULL;
	}
	return connection;
}

void bolt_link_bare_send_completed(struct bolt_work_completion *work, const struct ibv_wc *wc)
{
	struct bolt_control_buffer *record = bolt_control_buffer_of_work(work);
	struct bolt_connection *connection;

	if (!record->posted)
		return;
	connection = bolt_link_send_completed(record, wc);
	if (!connection)
		return;
	/* A segment's room came back: the next may go. */
	bolt_rewrite_post(connection);
	connection->manager->events->can_send(connection);
}

int bolt_link_send_probe(struct bolt_connection *connection, uint32_t nonce)
{
	struct bolt_control_buffer *record = bolt_control_buffer_get(connection->manager->domain);
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = nonce };

	if (!record)
		return -FI_EAGAIN;
	record->send_slots = 1;
	return bolt_link_post(connection, record, &wr, NULL, bolt_link_bare_send_completed) ? 0 : -FI_EIO;
}

/* A CREDIT header through a buffer of its own; false if it cannot go now. */
static bool bolt_link_send_credit(struct bolt_connection *connection, uint8_t flags,
				  bool without_credit)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct bolt_control_buffer *record;
	struct bolt_wire_header *header;

	if (!bolt_link_has_room(connection, 0, 1, without_credit, false))
		return false;
	record = bolt_control_buffer_get(domain);
	if (!record)
		return false;
	record->send_slots = 1;
	header = (struct bolt_wire_header *) bolt_control_buffer_data(domain, record);
	bolt_link_frame(connection, header, BOLT_WIRE_CREDIT, 0);
	header->flags = BOLT_WIRE_FLAG_LAST | flags;
	bolt_rewrite_acknowledging(connection, header);
	return bolt_link_post_buffer(connection, record, sizeof(*header), NULL,
				     bolt_link_bare_send_completed);
}

/*
 * A header that only returns credits, once a batch of receives is posted
 * again: a peer whose every write takes a receive (UC) would otherwise run
 * dry whenever this end comes back late to its completions. It costs the
 * peer one receive per batch.
 */
void bolt_link_return_credits(struct bolt_connection *connection)
{
	struct bolt_link *link = connection->link;
	/* Receives held back are no credits the peer can wait for. */
	uint32_t half_not_held = (link->receive_depth - link->held_count) / 2;
	uint32_t due = half_not_held < BOLT_LINK_REPOST_BATCH ? half_not_held : BOLT_LINK_REPOST_BATCH;

	if (!link->credits_to_return || (link->credits_to_return < due && !link->credits_urgent))
		return;
	bolt_link_send_credit(connection, 0, false);
}

bool bolt_link_send_acknowledgement(struct bolt_connection *connection, bool resend,
				    bool without_credit)
{
	return bolt_link_send_credit(connection, resend ? BOLT_WIRE_FLAG_RESEND : 0, without_credit);
}
