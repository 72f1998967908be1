/*
 * bolt_receive.c: receiving. Each link keeps receive_depth control buffers
 * posted; every arriving message is checked (op, lengths, credits, then its
 * connection's slot and sequence) before anything in it is trusted, handled
 * by its op on its connection, and its buffer posted again with the next
 * few, which earns the peer credits back on the link. While an endpoint
 * keeps more of a peer's unexpected data than FI_BOLT_UNEXPECTED_LIMIT, the
 * buffers that peer's messages took are held back instead: their credits stay
 * here, and the peer waits rather than this process growing without bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_endpoint.h"

static void bolt_receive_completed(struct bolt_work_completion *work, const struct ibv_wc *wc);

/* Posts count control buffers on link's queue pair in one call. */
static int bolt_receive_post(struct bolt_link *link, struct bolt_control_buffer **records,
			     uint32_t count)
{
	struct bolt_domain *domain = link->domain;
	struct ibv_sge sge[BOLT_LINK_REPOST_BATCH];
	struct ibv_recv_wr wr[BOLT_LINK_REPOST_BATCH];
	struct ibv_recv_wr *bad_wr;
	int ret;

	for (uint32_t i = 0; i < count; i++) {
		sge[i] = (struct ibv_sge) {
			.addr = (uintptr_t) bolt_control_buffer_data(domain, records[i]),
			.length = (uint32_t) domain->control_pool.buffer_size,
			.lkey = link->port->control_mr->lkey,
		};
		wr[i] = (struct ibv_recv_wr) {
			.wr_id = (uintptr_t) &records[i]->work,
			.next = i + 1 < count ? &wr[i + 1] : NULL,
			.sg_list = &sge[i],
			.num_sge = 1,
		};
		records[i]->work.handle = bolt_receive_completed;
		records[i]->link = link;
		records[i]->posted = true;
	}
	ret = domain->fabric->verbs.post_recv(link->qp, wr, &bad_wr);
	if (ret) {
		/* The link fails: its reclaim returns every buffer marked posted, taken or not. */
		FI_WARN(&bolt_prov, FI_LOG_EP_DATA, "post_recv failed: %s\n", strerror(ret));
		return -FI_EIO;
	}
	return 0;
}

/*
 * Posts record again, with others: each post_recv takes the device's lock,
 * which the peer's writes into this process need too. A batch of a quarter
 * of the depth leaves the peer enough credits to go on meanwhile, and those
 * posted and not returned enough to send them back (bolt_transmit.c).
 * Returns nonzero if the link failed.
 */
static int bolt_receive_repost(struct bolt_link *link, struct bolt_control_buffer *record)
{
	link->unposted[link->unposted_count++] = record;
	if (link->unposted_count < BOLT_LINK_REPOST_BATCH)
		return 0;
	if (bolt_receive_post(link, link->unposted, link->unposted_count)) {
		link->unposted_count = 0;
		bolt_link_fail(link, FI_EIO, "a receive could not be posted again");
		return -FI_EIO;
	}
	link->credits_to_return += link->unposted_count;
	link->unposted_count = 0;
	return 0;
}

bool bolt_receive_over_limit(const struct bolt_connection *connection)
{
	return connection->unexpected_bytes >
	       (size_t) connection->endpoint->domain->fabric->params.unexpected_limit;
}

/*
 * Whether the receive a message of the application took stays unposted: its
 * credit then stays here, and the peer, which keeps some credits back from
 * such messages for answers (bolt_transmit.c), soon waits.
 */
static bool bolt_receive_should_hold(const struct bolt_link *link,
				     const struct bolt_connection *connection, bool message)
{
	return message && connection && link->held_count < BOLT_LINK_RECEIVE_DEPTH &&
	       bolt_receive_over_limit(connection);
}

void bolt_receive_release_held(struct bolt_domain *domain)
{
	struct bolt_link *link, *next;

	domain->release_held = false;
	/* A failed post retires the link; its reclaim returns what is still held. */
	DL_FOREACH_SAFE(domain->links, link, next)
		while (link->qp && link->held_count &&
		       !bolt_receive_repost(link, link->held[--link->held_count]))
			;
}

int bolt_receive_post_initial(struct bolt_link *link)
{
	struct bolt_domain *domain = link->domain;

	for (uint32_t i = 0; i < link->receive_depth; i++) {
		struct bolt_control_buffer *record = bolt_control_buffer_get(domain);
		int ret;

		if (!record) {
			FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
				"no free control buffer for a connection's receives (%u in the pool)\n",
				domain->control_pool.buffer_count);
			return -FI_ENOMEM;
		}
		ret = bolt_receive_post(link, &record, 1);
		if (ret)
			return ret;
	}
	return 0;
}

static const char *bolt_receive_check_credits(const struct bolt_link *link,
					      const struct bolt_wire_header *header)
{
	if ((uint64_t) link->send_credits + header->credits > link->peer_receive_depth)
		return "more credits than the peer has receives";
	return NULL;
}

/* Why a message on link cannot be trusted, or NULL. */
static const char *bolt_receive_check_link(const struct bolt_link *link,
					   const struct bolt_wire_header *header, uint32_t length)
{
	if (length < sizeof(*header))
		return "message shorter than its header";
	if (header->op < BOLT_WIRE_MESSAGE || header->op > BOLT_WIRE_OP_LAST)
		return "unknown operation";
	if (header->payload_length != length - sizeof(*header) ||
	    header->payload_length > BOLT_SEGMENT_PAYLOAD)
		return "payload length does not match the message";
	return bolt_receive_check_credits(link, header);
}

/* Why a message cannot be trusted by its connection, or NULL. */
static const char *bolt_receive_check(const struct bolt_connection *connection,
				      const struct bolt_wire_header *header)
{
	if (header->sequence != connection->receive_sequence)
		return "sequence gap: a message was lost";
	if (header->total_length > BOLT_MAX_MSG_SIZE ||
	    (bolt_wire_op_carries_data((enum bolt_wire_op) header->op) &&
	     header->offset + header->payload_length > header->total_length))
		return "segment outside its message";
	return NULL;
}

static void bolt_receive_write(struct bolt_connection *connection,
			       const struct bolt_wire_header *header, const char *payload);
static void bolt_receive_write_ack(struct bolt_connection *connection,
				   const struct bolt_wire_header *header);
static void bolt_receive_read_request(struct bolt_connection *connection,
				      const struct bolt_wire_header *header, const char *payload);
static void bolt_receive_read_response(struct bolt_connection *connection,
				       const struct bolt_wire_header *header, const char *payload);

static void bolt_receive_message(struct bolt_connection *connection,
				 const struct bolt_wire_header *header, const char *payload,
				 size_t payload_length)
{
	if (header->offset == 0 && !connection->inbound.active)
		bolt_match_arrival(connection, header, payload, payload_length);
	else if (connection->inbound.active && header->offset == connection->inbound.received)
		bolt_match_segment(connection, header, payload, payload_length);
	else
		bolt_connection_fail(connection, FI_EIO, "message segment out of order");
}

/* payload_length: a message's, which a bounce buffer's header does not hold. */
static void bolt_receive_dispatch(struct bolt_connection *connection,
				  const struct bolt_wire_header *header, const char *payload,
				  size_t payload_length)
{
	switch (header->op) {
	case BOLT_WIRE_MESSAGE:
		bolt_receive_message(connection, header, payload, payload_length);
		break;
	case BOLT_WIRE_WRITE:
		bolt_receive_write(connection, header, payload);
		break;
	case BOLT_WIRE_WRITE_ACK:
		bolt_receive_write_ack(connection, header);
		break;
	case BOLT_WIRE_READ_REQUEST:
		bolt_receive_read_request(connection, header, payload);
		break;
	case BOLT_WIRE_READ_RESPONSE:
		bolt_receive_read_response(connection, header, payload);
		break;
	case BOLT_WIRE_RENDEZVOUS:
		if (header->flags & BOLT_WIRE_FLAG_WRITE)
			bolt_rendezvous_write_request(connection, header);
		else
			bolt_rendezvous_arrival(connection, header);
		break;
	case BOLT_WIRE_RENDEZVOUS_READY:
		bolt_rendezvous_answered(connection, header, payload);
		break;
	case BOLT_WIRE_RENDEZVOUS_DONE:
		bolt_rendezvous_done(connection, header);
		break;
	case BOLT_WIRE_RAIL_REQUEST:
		bolt_data_rail_requested(connection, header, payload);
		break;
	case BOLT_WIRE_RAIL_ANSWER:
		bolt_data_rail_answered(connection, header, payload);
		break;
	case BOLT_WIRE_RAIL_PROBED:
		bolt_data_rail_probed(connection, header);
		break;
	case BOLT_WIRE_RAIL_READY:
		bolt_data_rail_peer_ready(connection, header);
		break;
	case BOLT_WIRE_RAIL_PROBE_SENT:
		bolt_data_rail_probe_sent(connection, header);
		break;
	case BOLT_WIRE_REGION_GRANT:
		bolt_direct_write_granted(connection, header);
		break;
	case BOLT_WIRE_REGION_REVOKE:
		bolt_direct_write_revoked(connection, header);
		break;
	case BOLT_WIRE_REGION_REVOKED:
		bolt_direct_write_revoke_answered(connection, header);
		break;
	case BOLT_WIRE_RECEIVE_GRANT:
		bolt_receive_grant_arrived(connection, header, payload);
		break;
	case BOLT_WIRE_RECEIVE_REVOKE:
		bolt_receive_grant_revoked(connection);
		break;
	case BOLT_WIRE_RECEIVE_REVOKED:
		bolt_receive_grant_revoke_answered(connection);
		break;
	case BOLT_WIRE_CREDIT:
		break;
	}
}

/*
 * The connection a write with immediate data on link is for: on UC the
 * immediate names its slot, on RC only slot 0 writes with immediate data.
 */
static struct bolt_connection *bolt_receive_write_connection(const struct bolt_link *link,
							     const struct ibv_wc *wc)
{
	if (link->qp->qp_type == IBV_QPT_RC)
		return bolt_link_connection(link, 0);
	return bolt_link_connection(link, (uint8_t) ((wc->imm_data & BOLT_IMMEDIATE_SLOT_MASK) >>
						     BOLT_IMMEDIATE_SLOT_SHIFT));
}

/* A write with immediate data landed for connection: no message, its data is in place. */
static void bolt_receive_landed(struct bolt_connection *connection, const struct ibv_wc *wc)
{
	/*
	 * Immediate data that names a message is a message's written into a
	 * granted receive. Any other on RC, and on UC one that names no transfer,
	 * is a direct write's; on UC one that names a transfer a stripe's.
	 */
	if ((wc->wc_flags & IBV_WC_WITH_IMM) &&
	    bolt_receive_grant_immediate_names(connection, wc->imm_data))
		bolt_receive_grant_written(connection, wc);
	else if (!bolt_rendezvous_unreliable(connection) ||
		 !(wc->imm_data & (BOLT_IMMEDIATE_ID | BOLT_IMMEDIATE_WRITE_BACK | BOLT_IMMEDIATE_GRANTED)))
		bolt_direct_write_arrived(connection, wc);
	else if (!bolt_rendezvous_stripe_landed(connection, wc) &&
		 !bolt_rendezvous_read_landed(connection, wc))
		bolt_connection_fail(connection, FI_EIO, "a stripe for no transfer");
}

/*
 * A message for its connection, if that is still there (the peer may not
 * know yet that it left); returns the connection.
 */
static struct bolt_connection *bolt_receive_arrived(struct bolt_link *link,
						    const struct bolt_wire_header *header,
						    const char *payload, size_t payload_length)
{
	struct bolt_connection *connection = bolt_link_connection(link, header->slot);
	const char *problem;

	if (!connection || connection->slot_nonce != header->slot_nonce)
		return NULL;
	problem = bolt_receive_check(connection, header);
	if (problem) {
		bolt_loss_fail(connection, problem);
		return NULL;
	}
	connection->receive_sequence++;
	bolt_receive_dispatch(connection, header, payload, payload_length);
	return connection;
}

static void bolt_receive_completed(struct bolt_work_completion *work, const struct ibv_wc *wc)
{
	struct bolt_control_buffer *record = bolt_control_buffer_of_work(work);
	struct bolt_link *link = record->link;
	struct bolt_domain *domain;
	const struct bolt_wire_header *header;
	struct bolt_wire_header bounced;
	struct bolt_connection *connection;
	const char *problem, *payload;
	bool message = false;

	if (!record->posted)
		return;
	domain = link->domain;
	if (!link->qp) {
		bolt_control_buffer_put(domain, record);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		bolt_control_buffer_put(domain, record);
		bolt_link_fail(link, FI_EIO, domain->fabric->verbs.wc_status_str(wc->status));
		return;
	}
	if (link->probing && wc->opcode == IBV_WC_RECV && (wc->wc_flags & IBV_WC_WITH_IMM) &&
	    !wc->byte_len) {
		/* A new link's probe: its ports meet (bolt_connection.c). */
		link->probe_arrived = true;
		link->probe_nonce = wc->imm_data;
		connection = NULL;
	} else if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM && bolt_bounce_immediate(link, wc)) {
		problem = bolt_bounce_arrived(link, wc, &bounced, &payload);
		if (!problem)
			problem = bolt_receive_check_credits(link, &bounced);
		if (problem) {
			bolt_control_buffer_put(domain, record);
			bolt_link_fail(link, FI_EIO, problem);
			return;
		}
		link->send_credits += bounced.credits;
		message = true;
		connection = bolt_receive_arrived(link, &bounced, payload, bounced.total_length);
	} else if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		connection = bolt_receive_write_connection(link, wc);
		if (connection)
			bolt_receive_landed(connection, wc);
	} else {
		header = (const struct bolt_wire_header *) bolt_control_buffer_data(domain, record);
		problem = bolt_receive_check_link(link, header, wc->byte_len);
		if (problem) {
			bolt_control_buffer_put(domain, record);
			bolt_link_fail(link, FI_EIO, problem);
			return;
		}
		link->send_credits += header->credits;
		message = header->op == BOLT_WIRE_MESSAGE;
		connection = bolt_receive_arrived(link, header, (const char *) (header + 1),
						  header->payload_length);
	}
	/* Handling it may have failed the last connection, and retired the link with it. */
	if (!link->qp) {
		bolt_control_buffer_put(domain, record);
		return;
	}
	/* The payload has been copied out: the buffer can take the next message. */
	if (bolt_receive_should_hold(link, connection, message))
		link->held[link->held_count++] = record;
	else if (bolt_receive_repost(link, record))
		return;
	/* Its connection returns the credit; with none left there, any other may. */
	if (connection && connection->state != BOLT_CONNECTION_FAILED)
		bolt_transmit_progress(connection);
	else
		bolt_link_progress(link);
}

static void bolt_receive_write(struct bolt_connection *connection,
			       const struct bolt_wire_header *header, const char *payload)
{
	struct bolt_endpoint *endpoint = connection->endpoint;
	struct bolt_inbound *record;
	struct bolt_transmit *ack;
	char *local;
	int status;

	if (header->offset == 0)
		connection->write_status = 0;
	if (!connection->write_status && header->payload_length) {
		status = bolt_mr_translate(endpoint, header->key, header->address + header->offset,
					   header->payload_length, FI_REMOTE_WRITE, &local);
		if (status)
			connection->write_status = status;
		else
			memcpy(local, payload, header->payload_length);
	}
	if (!(header->flags & BOLT_WIRE_FLAG_LAST))
		return;
	/* A rendezvous write that fell back to segments no longer needs its range registered. */
	record = bolt_rendezvous_take(connection, header->request_id);
	if (record)
		bolt_rendezvous_record_free(connection, record);
	/* A zero-length write still names a key that must exist. */
	if (!header->total_length && !connection->write_status)
		connection->write_status = bolt_mr_translate(endpoint, header->key, header->address, 0,
							     FI_REMOTE_WRITE, &local);
	if (!connection->write_status) {
		bolt_endpoint_count_remote(endpoint, BOLT_COUNTER_REMOTE_WRITE,
					   header->flags & BOLT_WIRE_FLAG_REMOTE_CQ_DATA,
					   header->cq_data, header->total_length);
		/* Ahead of the ack: the writes after it need no segments. */
		bolt_direct_write_grant(connection, header);
	}
	ack = bolt_transmit_internal(connection, BOLT_WIRE_WRITE_ACK, header->request_id,
				     (uint32_t) connection->write_status);
	if (ack)
		bolt_transmit_start(ack);
}

static void bolt_receive_write_ack(struct bolt_connection *connection,
				   const struct bolt_wire_header *header)
{
	struct bolt_transmit *write = bolt_transmit_find_request(connection, BOLT_WIRE_WRITE,
								  header->request_id);

	if (!write) {
		bolt_connection_fail(connection, FI_EIO, "acknowledgement of no write");
		return;
	}
	bolt_transmit_reply_arrived(write, (int) header->cq_data);
}

static void bolt_receive_read_request(struct bolt_connection *connection,
				      const struct bolt_wire_header *header, const char *payload)
{
	struct bolt_endpoint *endpoint = connection->endpoint;
	struct bolt_transmit *response;
	char *local = NULL;
	int status;

	status = bolt_mr_translate(endpoint, header->key, header->address, header->total_length,
				   FI_REMOTE_READ, &local);
	response = bolt_transmit_internal(connection, BOLT_WIRE_READ_RESPONSE, header->request_id,
					  (uint32_t) status);
	if (!response)
		return;
	if (!status) {
		response->iov[0].iov_base = local;
		response->iov[0].iov_len = header->total_length;
		response->iov_count = 1;
		response->length = header->total_length;
		bolt_endpoint_count_remote(endpoint, BOLT_COUNTER_REMOTE_READ, false, 0,
					   header->total_length);
		bolt_rendezvous_read_answer(connection, header, payload, response);
	}
	bolt_transmit_start(response);
}

static void bolt_receive_read_response(struct bolt_connection *connection,
				       const struct bolt_wire_header *header, const char *payload)
{
	struct bolt_transmit *read = bolt_transmit_find_request(connection, BOLT_WIRE_READ_REQUEST,
								 header->request_id);

	if (!read || (!header->cq_data && header->total_length != read->length)) {
		bolt_connection_fail(connection, FI_EIO, "read data for no read");
		return;
	}
	/* Only a read that offered its buffer can have its data written back. */
	if ((header->flags & BOLT_WIRE_FLAG_WRITE_BACK) &&
	    !(read->wire_flags & BOLT_WIRE_FLAG_WRITE_BACK)) {
		bolt_connection_fail(connection, FI_EIO, "read data written back where no buffer was offered");
		return;
	}
	if (header->cq_data) {
		bolt_transmit_reply_arrived(read, (int) header->cq_data);
		return;
	}
	/* Written back by RDMA on RC: this header follows the data on the queue pair. */
	if (header->flags & BOLT_WIRE_FLAG_WRITE_BACK) {
		bolt_rendezvous_read_written_back(connection, read);
		return;
	}
	bolt_iov_copy_in(read->iov, read->iov_count, header->offset, payload, header->payload_length);
	read->received += header->payload_length;
	if (header->flags & BOLT_WIRE_FLAG_LAST)
		bolt_transmit_reply_arrived(read, 0);
}
