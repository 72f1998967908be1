/*
 * bolt_pull.c: a large message pulled by its receiver, where the layer above
 * allows it (transmit->pullable). With the rendezvous of bolt_rendezvous.c
 * the sender copies: a sender of one buffer to several peers writes to each
 * in turn, each write after that peer answered, and a peer that shares a
 * core with others answers late. On RC the request may instead name the
 * sender's buffer (address, and key on the port in offset): the receiver,
 * once a receive matches, reads the message itself by RDMA and says so in
 * its answer (BOLT_RENDEZVOUS_PULLED), which completes the send. So the
 * receivers copy at once, each on its own core, as Open MPI's single-copy
 * shared memory has them do, and nothing waits for the sender between
 * request and data.
 *
 * The sender exposes its buffer for reading only, exactly its bytes, until
 * the send completes (bolt_registration.h). UC has no RDMA read: there the
 * request names no buffer. The receiver answers as it would have (for a
 * write) whenever it does not read: its control rail moved to a port the
 * key is not for, its send queue is full, or the read came back flushed
 * when the link moved; the sender then writes as usual. A read goes whole
 * on the control rail: one that fails over has no stripes to account for,
 * only the usual answer to give instead.
 */
#include "bolt_endpoint.h"
#include "protocol/bolt_pull.h"
#include "protocol/bolt_rdma.h"

/* ---- Sender ---- */

void bolt_pull_offer(struct bolt_connection *connection, struct bolt_transmit *transmit,
		     struct bolt_wire_header *header)
{
	struct ibv_mr *mr;

	/* A buffer registered for this end alone (asked again) has no key to give. */
	if (!transmit->pullable || transmit->op != BOLT_WIRE_MESSAGE || transmit->iov_count != 1 ||
	    bolt_connection_unreliable(connection) || transmit->length > UINT32_MAX ||
	    (transmit->registration.primary && !transmit->registration.peer_reads))
		return;
	if (!transmit->registration.primary &&
	    !bolt_registration_expose_readable(connection, transmit->iov[0].iov_base, transmit->length,
					       &transmit->registration))
		return;
	mr = bolt_registration_follow_link(connection, &transmit->registration);
	if (!mr)
		return;
	transmit->pull_offered = true;
	header->address = (uintptr_t) transmit->iov[0].iov_base;
	header->key = mr->rkey;
	header->offset = (uint64_t) bolt_connection_port_index(connection);
}

bool bolt_pull_answered(struct bolt_connection *connection, struct bolt_transmit *transmit,
			const struct bolt_wire_header *header)
{
	if (header->cq_data != BOLT_RENDEZVOUS_PULLED)
		return false;
	if (!transmit->pull_offered) {
		bolt_connection_fail(connection, FI_EIO, "a message pulled that was not offered");
		return true;
	}
	transmit->sent = transmit->length;
	bolt_transmit_posted_all(transmit);
	bolt_transmit_reply_arrived(transmit, 0);
	return true;
}

void bolt_pull_withdraw(struct bolt_transmit *transmit)
{
	/*
	 * A read of the old buffer not yet done then fails, and with it that
	 * link; one done already is answered, and completes the send.
	 */
	if (transmit->registration.peer_reads)
		bolt_registration_release(transmit->connection->manager->domain, &transmit->registration,
					  transmit->covered);
}

/* ---- Receiver ---- */

void bolt_pull_note(struct bolt_connection *connection, struct bolt_inbound *record,
		    const struct bolt_wire_header *header)
{
	if (header->op != BOLT_WIRE_RENDEZVOUS || (header->flags & BOLT_WIRE_FLAG_WRITE) ||
	    !header->address || header->key > UINT32_MAX || bolt_connection_unreliable(connection))
		return;
	record->pull_address = header->address;
	record->pull_key = (uint32_t) header->key;
	record->pull_port = bolt_rendezvous_key_port(connection, header);
}

/* The read is in the receive: the sender's send is complete, and so is this receive. */
static void bolt_pull_done(struct bolt_connection *connection, struct bolt_inbound *record)
{
	struct bolt_transmit *answer = bolt_transmit_internal(connection, BOLT_WIRE_RENDEZVOUS_READY,
							      record->request_id, BOLT_RENDEZVOUS_PULLED);

	if (answer)
		bolt_transmit_start(answer);
	bolt_peer_of(connection)->messages_pulled++;
	bolt_rendezvous_finish(connection, record);
}

static void bolt_pull_completed(struct bolt_work_completion *work, const struct ibv_wc *wc)
{
	struct bolt_control_buffer *buffer = bolt_control_buffer_of_work(work);
	struct bolt_inbound *record = buffer->operation;
	struct bolt_connection *connection;

	if (!buffer->posted)
		return;
	/* NULL: the link or the connection failed, and the record went with it. */
	connection = bolt_link_send_completed(buffer, wc);
	if (!connection)
		return;
	record->pulling = false;
	if (wc->status == IBV_WC_SUCCESS) {
		bolt_pull_done(connection, record);
		return;
	}
	/* Flushed when the link moved: the sender writes it instead. */
	FI_INFO(&bolt_prov, FI_LOG_EP_DATA, "a read of %zu bytes came back flushed (%s): the sender writes them\n",
		record->length, connection->manager->domain->fabric->verbs.wc_status_str(wc->status));
	record->pull_port = NULL;
	bolt_rendezvous_answer(connection, record);
}

bool bolt_pull_start(struct bolt_connection *connection, struct bolt_inbound *record, void *address,
		     size_t length)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct ibv_mr *mr = bolt_registration_link_mr(connection, &record->registration);
	struct bolt_control_buffer *buffer;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ };

	if (!record->pull_port || record->pull_port != connection->link->port || !mr || !length ||
	    length > UINT32_MAX || !bolt_link_can_write(connection))
		return false;
	buffer = bolt_control_buffer_get(domain);
	if (!buffer)
		return false;
	sge.addr = (uintptr_t) address;
	sge.length = (uint32_t) length;
	sge.lkey = mr->lkey;
	wr.wr.rdma.remote_addr = record->pull_address;
	wr.wr.rdma.rkey = record->pull_key;
	buffer->operation = record;
	buffer->send_slots = 1;
	record->pulling = true;
	/* A refused post failed the link, and the record with its connection. */
	bolt_link_post(connection, buffer, &wr, NULL, bolt_pull_completed);
	return true;
}
