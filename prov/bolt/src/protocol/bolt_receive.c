/*
 * bolt_receive.c: what arrives from a peer, after the connection layer
 * checked its frame (connection/bolt_link_receive.c): each message handled
 * by its op (segments of messages, writes, reads and their replies,
 * rendezvous, grants), and writes with immediate data told apart by what
 * their immediate names. A message's own bounds are checked here before any
 * of it is used.
 */
#include <string.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"
#include "protocol/bolt_tag_grant.h"

bool bolt_receive_over_limit(const struct bolt_connection *connection)
{
	const struct bolt_inbound *inbound = &bolt_peer_of(connection)->inbound;

	/* A message that has its receive has somewhere to go: holding its peer would stall it. */
	if (inbound->active && inbound->receive)
		return false;
	return bolt_match_peer_over_limit(connection) ||
	       bolt_match_endpoint_over_limit(bolt_connection_endpoint(connection));
}

/*
 * Why a message cannot be trusted by its connection, or NULL. The segment's
 * end is compared by subtraction: offset + payload_length wraps for an offset
 * near 2^64, and would pass.
 */
const char *bolt_receive_check(const struct bolt_wire_header *header)
{
	if (header->total_length > BOLT_MAX_MSG_SIZE ||
	    (bolt_wire_op_carries_data((enum bolt_wire_op) header->op) &&
	     (header->offset > header->total_length ||
	      header->payload_length > header->total_length - header->offset)))
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

/* A segment of a message, the first or the next of the one arriving. */
static void bolt_receive_segment(struct bolt_connection *connection,
				 const struct bolt_wire_header *header, const char *payload,
				 size_t payload_length)
{
	if (header->offset == 0 && !bolt_peer_of(connection)->inbound.active)
		bolt_match_arrival(connection, header, payload, payload_length);
	else if (bolt_peer_of(connection)->inbound.active && header->offset == bolt_peer_of(connection)->inbound.received)
		bolt_match_segment(connection, header, payload, payload_length);
	else
		bolt_connection_fail(connection, FI_EIO, "message segment out of order");
}

/* payload_length: a message's, which a bounce buffer's header does not hold. */
void bolt_receive_message(struct bolt_connection *connection, const struct bolt_wire_header *header,
			  const char *payload, size_t payload_length)
{
	const char *problem = bolt_receive_check(header);

	if (problem) {
		bolt_loss_fail(connection, problem);
		return;
	}
	switch (header->op) {
	case BOLT_WIRE_MESSAGE:
		bolt_receive_segment(connection, header, payload, payload_length);
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
	case BOLT_WIRE_STRIPE_MOVED:
		bolt_rendezvous_stripe_moved(connection, header);
		break;
	case BOLT_WIRE_STRIPE_KEY_ASK:
		bolt_rendezvous_key_asked(connection, header);
		break;
	case BOLT_WIRE_STRIPE_KEY:
		bolt_failover_key_arrived(connection, header);
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
	case BOLT_WIRE_TAG_GRANT:
		bolt_tag_grant_arrived(connection, header, payload);
		break;
	case BOLT_WIRE_TAG_REVOKE:
		bolt_tag_grant_revoked(connection, header);
		break;
	case BOLT_WIRE_TAG_REVOKED:
		bolt_tag_grant_revoke_answered(connection, header);
		break;
	default:
		/* Credits and the data rails' messages stay with the connection layer. */
		break;
	}
}

/* A write with immediate data landed for connection: no message, its data is in place. */
void bolt_receive_landed(struct bolt_connection *connection, const struct ibv_wc *wc)
{
	/*
	 * Immediate data that names a message is a message's written into a
	 * granted receive. Any other on RC, and on UC one that names no transfer,
	 * is a direct write's; on UC one that names a transfer a stripe's.
	 */
	if ((wc->wc_flags & IBV_WC_WITH_IMM) &&
	    bolt_receive_grant_immediate_names(connection, wc->imm_data))
		bolt_receive_grant_written(connection, wc);
	else if (!bolt_connection_unreliable(connection) ||
		 !(wc->imm_data & (BOLT_IMMEDIATE_ID | BOLT_IMMEDIATE_WRITE_BACK | BOLT_IMMEDIATE_GRANTED)))
		bolt_direct_write_arrived(connection, wc);
	else if (!bolt_rendezvous_stripe_landed(connection, wc, BOLT_STRIPE_RAIL_UNKNOWN, false) &&
		 !bolt_rendezvous_read_landed(connection, wc, BOLT_STRIPE_RAIL_UNKNOWN, false))
		bolt_connection_fail(connection, FI_EIO, "a stripe for no transfer");
}

static void bolt_receive_write(struct bolt_connection *connection,
			       const struct bolt_wire_header *header, const char *payload)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	struct bolt_inbound *record;
	struct bolt_transmit *ack;
	char *local;
	int status;

	if (header->offset == 0)
		bolt_peer_of(connection)->write_status = 0;
	if (!bolt_peer_of(connection)->write_status && header->payload_length) {
		status = bolt_mr_translate(endpoint, header->key, header->address + header->offset,
					   header->payload_length, FI_REMOTE_WRITE, &local);
		if (status)
			bolt_peer_of(connection)->write_status = status;
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
	if (!header->total_length && !bolt_peer_of(connection)->write_status)
		bolt_peer_of(connection)->write_status = bolt_mr_translate(endpoint, header->key, header->address, 0,
							     FI_REMOTE_WRITE, &local);
	if (!bolt_peer_of(connection)->write_status) {
		bolt_endpoint_count_remote(endpoint, BOLT_COUNTER_REMOTE_WRITE,
					   header->flags & BOLT_WIRE_FLAG_REMOTE_CQ_DATA,
					   header->cq_data, header->total_length);
		/* Ahead of the ack: the writes after it need no segments. */
		bolt_direct_write_grant(connection, header);
	}
	ack = bolt_transmit_internal(connection, BOLT_WIRE_WRITE_ACK, header->request_id,
				     (uint32_t) bolt_peer_of(connection)->write_status);
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
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
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
