/*
 * bolt_transmit.c: sending. Each connection keeps its operations in order and
 * cuts them into segments of one control buffer each. A segment goes out only
 * when the peer has a receive posted for it (a credit: UC loses a SEND that
 * finds none), the send queue has room and a buffer is free. The last credit
 * is kept for returning credits, so two busy peers never wait on each other,
 * and the application's messages leave a batch of reposts more for answers
 * (bolt_transmit_spare_credits).
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_pull.h"
#include "protocol/bolt_rdma.h"
#include "protocol/bolt_tag_grant.h"

void bolt_transmit_posted_all(struct bolt_transmit *transmit)
{
	struct bolt_connection *connection = transmit->connection;

	transmit->posted_last = true;
	DL_DELETE(bolt_peer_of(connection)->transmits, transmit);
	DL_APPEND(bolt_peer_of(connection)->posted, transmit);
}

/*
 * Credits transmit must leave: the last one returns credits. A receiver over
 * its unexpected limit holds back the receives the application's messages
 * took (bolt_receive.c); those messages leave a batch of reposts more, so
 * answers (rendezvous, acks, read data) still fill a batch, get it posted
 * and the credits back, and two peers never wait on each other.
 */
static uint32_t bolt_transmit_spare_credits(const struct bolt_transmit *transmit)
{
	return transmit->op == BOLT_WIRE_MESSAGE && !transmit->internal ?
	       BOLT_LINK_REPOST_BATCH + 1 : 1;
}

/*
 * A protocol (enum bolt_protocol_kind), its entry in bolt_protocols at the
 * end of its functions below. streams: its messages are the segments of one
 * message, which never interleave with another's (the peer receives one
 * message at a time).
 */
struct bolt_protocol {
	bool streams;
	/* Puts transmit's next message or write on the wire, in record. */
	void (*post)(struct bolt_connection *connection, struct bolt_transmit *transmit,
		     struct bolt_control_buffer *record);
};

static const struct bolt_protocol bolt_protocols[BOLT_PROTOCOL_KINDS];

/*
 * Whether a rendezvous write, answered or granted, goes as one write with
 * immediate data that names it: on UC, and for a granted receive where the
 * immediate may name it. Else (RC) a write, and its DONE after it.
 */
static bool bolt_transmit_write_names_itself(const struct bolt_connection *connection,
					     const struct bolt_transmit *transmit)
{
	return bolt_connection_unreliable(connection) ||
	       (transmit->protocol == BOLT_PROTOCOL_GRANTED_RECEIVE &&
		bolt_connection_may_write_immediate(connection));
}

/* Whether transmit's next post is the RDMA write of a rendezvous or a granted receive. */
static bool bolt_transmit_writing(const struct bolt_transmit *transmit)
{
	return (transmit->protocol == BOLT_PROTOCOL_RENDEZVOUS ||
		transmit->protocol == BOLT_PROTOCOL_GRANTED_RECEIVE) &&
	       transmit->phase == BOLT_RENDEZVOUS_WRITE;
}

/* Whether transmit waits for its rendezvous answer: nothing of it to post until then. */
static bool bolt_transmit_waiting(const struct bolt_transmit *transmit)
{
	return transmit->protocol == BOLT_PROTOCOL_RENDEZVOUS && transmit->phase == BOLT_RENDEZVOUS_WAIT;
}

/* A rendezvous write with its DONE takes two send queue entries; others one. */
static int bolt_transmit_slots(const struct bolt_connection *connection,
			       const struct bolt_transmit *transmit)
{
	return bolt_transmit_writing(transmit) &&
	       !bolt_transmit_write_names_itself(connection, transmit) ? 2 : 1;
}

/*
 * Whether transmit is an untagged message that must wait for ours written
 * into granted receives to land: the peer numbers untagged messages as they
 * arrive, and on UC a granted one lands only once its segments all arrived.
 */
static bool bolt_transmit_behind_granted(const struct bolt_connection *connection,
					 const struct bolt_transmit *transmit)
{
	/* An answer that says every write into a region or grant is ahead of it, once so on UC too. */
	if ((transmit->op == BOLT_WIRE_REGION_REVOKED || transmit->op == BOLT_WIRE_RECEIVE_REVOKED) &&
	    bolt_rewrite_pending(connection))
		return true;
	return bolt_peer_of(connection)->granted_landing && !transmit->internal &&
	       transmit->op == BOLT_WIRE_MESSAGE && !(transmit->flags & FI_TAGGED) &&
	       transmit->protocol != BOLT_PROTOCOL_GRANTED_RECEIVE;
}

/*
 * Whether transmit may put its next message on the wire: not while it waits
 * for a rendezvous answer, and the segments of two of the application's
 * operations never interleave (the peer receives one message at a time).
 * Single headers (rendezvous requests, DONE) and replies may.
 */
static bool bolt_transmit_may_go(const struct bolt_connection *connection,
				 const struct bolt_transmit *transmit)
{
	if (bolt_transmit_waiting(transmit) || bolt_transmit_behind_granted(connection, transmit))
		return false;
	/* A message written whole is a message: it waits for the one in segments. */
	if (transmit->internal || !bolt_protocols[transmit->protocol].streams)
		return true;
	return !bolt_peer_of(connection)->streaming || bolt_peer_of(connection)->streaming == transmit;
}

/*
 * Whether a rendezvous write may go on the control rail: its keys are on the
 * control rail's port, which may have moved since the answer; if not, the
 * target's key there is asked for (or the connection failed). A write into
 * a receive or region granted on a port the control rail has left asks
 * instead, as one without a grant would.
 */
static bool bolt_transmit_keys_here(struct bolt_connection *connection, struct bolt_transmit *transmit)
{
	uint32_t lkey, rkey;
	int ret;

	if ((transmit->protocol == BOLT_PROTOCOL_GRANTED_RECEIVE ||
	     transmit->protocol == BOLT_PROTOCOL_DIRECT_WRITE) &&
	    transmit->target_port != connection->link->port) {
		/* Judged again as the request it is now: it may have to wait for granted ones. */
		bolt_transmit_ask_instead(connection, transmit);
		return bolt_transmit_may_go(connection, transmit);
	}
	if (transmit->protocol != BOLT_PROTOCOL_RENDEZVOUS || transmit->phase != BOLT_RENDEZVOUS_WRITE)
		return true;
	ret = bolt_failover_control_keys(connection, transmit, &lkey, &rkey);
	if (ret < 0)
		bolt_connection_fail(connection, FI_EIO,
				     "a write's buffer cannot be registered on the control rail's port");
	return ret == 0;
}

/*
 * On UC, wr in segments that are written again when lost; false if there was
 * no memory for it (the connection failed).
 */
static bool bolt_transmit_write_again_when_lost(struct bolt_connection *connection,
						struct bolt_transmit *transmit,
						struct bolt_control_buffer *record,
						const struct ibv_send_wr *wr)
{
	bool with_immediate = wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	int ret = bolt_rewrite_start(connection, -1, record, wr->sg_list, wr->wr.rdma.remote_addr,
				     wr->wr.rdma.rkey, with_immediate ? &wr->imm_data : NULL);

	if (ret) {
		transmit->in_flight--;
		bolt_control_buffer_put(connection->manager->domain, record);
		bolt_connection_fail(connection, ret, "no memory for a write in segments");
		return false;
	}
	if (with_immediate)
		connection->stripes_sent++;
	if (transmit->protocol == BOLT_PROTOCOL_GRANTED_RECEIVE)
		bolt_peer_of(connection)->granted_landing++;
	return true;
}

/*
 * The whole of transmit as the one RDMA write wr describes, on the control
 * rail; one with immediate data counts as a stripe. False if the QP refused.
 */
static bool bolt_transmit_write_whole(struct bolt_connection *connection,
				      struct bolt_transmit *transmit,
				      struct bolt_control_buffer *record, struct ibv_send_wr *wr)
{
	transmit->sent = transmit->length;
	bolt_transmit_posted_all(transmit);
	record->operation = transmit;
	transmit->in_flight++;
	if (bolt_rewrite_applies(connection) && wr->num_sge == 1) {
		record->work.handle = bolt_transmit_send_completed;
		return bolt_transmit_write_again_when_lost(connection, transmit, record, wr);
	}
	if (!bolt_link_post(connection, record, wr, NULL, bolt_transmit_send_completed)) {
		transmit->in_flight--;
		return false;
	}
	if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		connection->stripes_sent++;
	return true;
}

/* A write into a granted region: one RDMA write, no message. */
static void bolt_transmit_direct_write(struct bolt_connection *connection,
				       struct bolt_transmit *transmit,
				       struct bolt_control_buffer *record)
{
	bool plain = transmit->plain_write;
	struct ibv_send_wr wr = { 0 };
	struct ibv_sge sge;

	bolt_direct_write_describe(transmit, &sge, &wr);
	if (!bolt_transmit_write_whole(connection, transmit, record, &wr))
		return;
	bolt_peer_of(connection)->direct_writes++;
	if (plain)
		bolt_peer_of(connection)->plain_writes++;
}

/* Answered on UC without data rails, or granted: the write alone, immediate data naming it. */
static void bolt_transmit_control_stripe(struct bolt_connection *connection,
					 struct bolt_transmit *transmit,
					 struct bolt_control_buffer *record)
{
	struct ibv_send_wr wr = { 0 };
	struct ibv_sge sge;

	bolt_rendezvous_describe_write(transmit, &sge, &wr);
	bolt_transmit_write_whole(connection, transmit, record, &wr);
}

/* What every message of an operation says about it. */
static void bolt_transmit_describe(struct bolt_wire_header *header, const struct bolt_transmit *transmit)
{
	header->tag = transmit->message_number ? transmit->message_number : transmit->tag;
	header->cq_data = transmit->cq_data;
	header->request_id = transmit->request_id;
	header->total_length = transmit->length;
	header->address = transmit->remote_address;
	header->key = transmit->remote_key;
	header->flags |= transmit->wire_flags;
	if (transmit->flags & FI_TAGGED)
		header->flags |= BOLT_WIRE_FLAG_TAGGED;
	if (transmit->flags & FI_REMOTE_CQ_DATA)
		header->flags |= BOLT_WIRE_FLAG_REMOTE_CQ_DATA;
	if (transmit->op == BOLT_WIRE_WRITE && bolt_direct_write_granted_key(transmit))
		header->flags |= BOLT_WIRE_FLAG_GRANTED;
}

/* The rendezvous request, or the write and its DONE (whose completion retires both). */
static void bolt_transmit_rendezvous_header(struct bolt_connection *connection,
					    struct bolt_transmit *transmit,
					    struct bolt_control_buffer *record,
					    struct bolt_wire_header *header)
{
	bool asking = transmit->phase == BOLT_RENDEZVOUS_ASK;
	struct ibv_send_wr write = { 0 };
	struct ibv_sge sge;

	/* RC: the write, unsignaled and without immediate: the DONE after it completes for both. */
	if (!asking) {
		bolt_rendezvous_describe_write(transmit, &sge, &write);
		write.opcode = IBV_WR_RDMA_WRITE;
	}
	/* A read's data written back ends with its response, a message's or a write's with DONE. */
	bolt_link_frame(connection, header,
			     asking ? BOLT_WIRE_RENDEZVOUS :
			     transmit->op == BOLT_WIRE_READ_RESPONSE ? BOLT_WIRE_READ_RESPONSE :
			     BOLT_WIRE_RENDEZVOUS_DONE, 0);
	bolt_transmit_describe(header, transmit);
	if (transmit->op == BOLT_WIRE_READ_RESPONSE)
		header->flags |= BOLT_WIRE_FLAG_WRITE_BACK;
	if (asking)
		bolt_pull_offer(connection, transmit, header);
	header->flags |= BOLT_WIRE_FLAG_LAST;
	if (transmit->op == BOLT_WIRE_WRITE)
		header->flags |= BOLT_WIRE_FLAG_WRITE;
	if (transmit->protocol == BOLT_PROTOCOL_GRANTED_RECEIVE)
		header->flags |= BOLT_WIRE_FLAG_GRANTED;
	if (asking && transmit->op == BOLT_WIRE_WRITE && !bolt_rendezvous_wants_ack(transmit))
		header->flags |= BOLT_WIRE_FLAG_NO_ACK;
	if (asking) {
		/* Out of the way of progress, which would only step over it, until its answer. */
		transmit->phase = BOLT_RENDEZVOUS_WAIT;
		DL_DELETE(bolt_peer_of(connection)->transmits, transmit);
		DL_APPEND(bolt_peer_of(connection)->waiting, transmit);
	} else {
		transmit->sent = transmit->length;
		bolt_transmit_posted_all(transmit);
		record->send_slots = 2;
	}
	record->operation = transmit;
	transmit->in_flight++;
	if (!bolt_link_post_buffer(connection, record, sizeof(*header), asking ? NULL : &write, bolt_transmit_send_completed))
		transmit->in_flight--;
}

/* A message written whole into the peer's next bounce buffer; false if it cannot be now. */
static bool bolt_transmit_bounce(struct bolt_connection *connection, struct bolt_transmit *transmit,
				 struct bolt_control_buffer *record)
{
	struct bolt_wire_header *header =
		(struct bolt_wire_header *) bolt_control_buffer_data(connection->manager->domain, record);
	struct ibv_send_wr wr = { 0 };
	struct ibv_sge sge[2];

	if (!bolt_bounce_describe(transmit, record, sge, &wr))
		return false;
	/* The whole payload follows the header: its length is the message's. */
	bolt_link_frame(connection, header, transmit->op, 0);
	bolt_transmit_describe(header, transmit);
	header->flags |= BOLT_WIRE_FLAG_LAST;
	transmit->sent = transmit->length;
	bolt_transmit_posted_all(transmit);
	bolt_peer_of(connection)->streaming = NULL;
	record->operation = transmit;
	transmit->in_flight++;
	if (!bolt_link_post(connection, record, &wr, NULL, bolt_transmit_send_completed))
		transmit->in_flight--;
	return true;
}

/* The next segment of transmit, through record's buffer. */
static void bolt_transmit_post_segment(struct bolt_connection *connection, struct bolt_transmit *transmit,
				       struct bolt_control_buffer *record)
{
	char *data = bolt_control_buffer_data(connection->manager->domain, record);
	struct bolt_wire_header *header = (struct bolt_wire_header *) data;
	size_t payload = 0;

	if (bolt_wire_op_carries_data(transmit->op)) {
		payload = transmit->length - transmit->sent;
		if (payload > BOLT_SEGMENT_PAYLOAD)
			payload = BOLT_SEGMENT_PAYLOAD;
		bolt_iov_copy_out(transmit->iov, transmit->iov_count, transmit->sent,
				  data + sizeof(*header), payload);
	} else if (transmit->internal && transmit->iov_count) {
		/* A protocol message's own payload (bolt_transmit_attach): whole, in one. */
		payload = transmit->iov[0].iov_len;
		memcpy(data + sizeof(*header), transmit->iov[0].iov_base, payload);
	} else if (transmit->rail_mask) {
		/* A read or a rendezvous answer offering data rails: their keys. */
		payload = bolt_rendezvous_rail_keys_write(transmit, data + sizeof(*header));
	}
	bolt_link_frame(connection, header, transmit->op, payload);
	bolt_transmit_describe(header, transmit);
	header->offset = bolt_wire_op_carries_data(transmit->op) ? transmit->sent :
			 (uint64_t) transmit->key_port;
	transmit->sent += payload;
	if (transmit->sent == transmit->length || !bolt_wire_op_carries_data(transmit->op)) {
		header->flags |= BOLT_WIRE_FLAG_LAST;
		bolt_transmit_posted_all(transmit);
	}
	if (!transmit->internal)
		bolt_peer_of(connection)->streaming = transmit->posted_last ? NULL : transmit;
	record->operation = transmit;
	transmit->in_flight++;
	if (!bolt_link_post_buffer(connection, record, sizeof(*header) + payload, NULL, bolt_transmit_send_completed))
		transmit->in_flight--;
}

/* Eager: a message started before its link was known may find bounce buffers now. */
static void bolt_transmit_post_eager(struct bolt_connection *connection, struct bolt_transmit *transmit,
				     struct bolt_control_buffer *record)
{
	if (!transmit->sent && bolt_bounce_wanted(transmit) &&
	    bolt_transmit_bounce(connection, transmit, record))
		return;
	bolt_transmit_post_segment(connection, transmit, record);
}

/* Buffers chosen at the start that cannot take the message after all: segments. */
static void bolt_transmit_post_bounce(struct bolt_connection *connection, struct bolt_transmit *transmit,
				      struct bolt_control_buffer *record)
{
	if (bolt_transmit_bounce(connection, transmit, record))
		return;
	transmit->protocol = BOLT_PROTOCOL_EAGER;
	bolt_transmit_post_segment(connection, transmit, record);
}

/*
 * The request, or once answered (or granted) the write: alone with immediate
 * data that names it, or followed by DONE. A request not yet sent that
 * learns of the peer's bounce buffers only now goes whole into one instead;
 * if they cannot take it, it stays a rendezvous.
 */
static void bolt_transmit_post_rendezvous(struct bolt_connection *connection,
					  struct bolt_transmit *transmit,
					  struct bolt_control_buffer *record)
{
	struct bolt_wire_header *header =
		(struct bolt_wire_header *) bolt_control_buffer_data(connection->manager->domain, record);

	if (transmit->phase == BOLT_RENDEZVOUS_ASK && !transmit->sent && bolt_bounce_wanted(transmit) &&
	    bolt_transmit_bounce(connection, transmit, record))
		return;
	if (transmit->phase == BOLT_RENDEZVOUS_WRITE && bolt_transmit_write_names_itself(connection, transmit))
		bolt_transmit_control_stripe(connection, transmit, record);
	else
		bolt_transmit_rendezvous_header(connection, transmit, record, header);
}

static const struct bolt_protocol bolt_protocols[BOLT_PROTOCOL_KINDS] = {
	[BOLT_PROTOCOL_EAGER] = { true, bolt_transmit_post_eager },
	[BOLT_PROTOCOL_BOUNCE] = { true, bolt_transmit_post_bounce },
	[BOLT_PROTOCOL_DIRECT_WRITE] = { false, bolt_transmit_direct_write },
	[BOLT_PROTOCOL_GRANTED_RECEIVE] = { false, bolt_transmit_post_rendezvous },
	[BOLT_PROTOCOL_RENDEZVOUS] = { false, bolt_transmit_post_rendezvous },
};

/* Puts transmit's next message on the wire by its protocol; false when no buffer is free. */
static bool bolt_transmit_segment(struct bolt_connection *connection, struct bolt_transmit *transmit)
{
	struct bolt_control_buffer *record = bolt_control_buffer_get(connection->manager->domain);

	if (!record)
		return false;
	record->send_slots = 1;
	bolt_protocols[transmit->protocol].post(connection, transmit, record);
	return true;
}

void bolt_transmit_other_ports(struct bolt_connection *connection)
{
	struct bolt_transmit *transmit, *next;
	struct ibv_mr *mr;

	DL_FOREACH_SAFE(bolt_peer_of(connection)->transmits, transmit, next) {
		/* Data rails were asked for ahead of the first large transfer: none now. */
		if (transmit->internal && transmit->op == BOLT_WIRE_RAIL_REQUEST) {
			DL_DELETE(bolt_peer_of(connection)->transmits, transmit);
			bolt_transmit_free(transmit);
			continue;
		}
		if (transmit->op != BOLT_WIRE_READ_REQUEST ||
		    !(transmit->wire_flags & BOLT_WIRE_FLAG_WRITE_BACK))
			continue;
		mr = bolt_registration_expose(connection, transmit->iov[0].iov_base, transmit->length,
					     &transmit->registration) ?
		     bolt_registration_link_mr(connection, &transmit->registration) : NULL;
		if (mr) {
			transmit->cq_data = mr->rkey;
			transmit->key_port = bolt_connection_port_index(connection);
		} else {
			transmit->wire_flags &= (uint8_t) ~BOLT_WIRE_FLAG_WRITE_BACK;
		}
	}
}

/*
 * The application's operations go out in order: one that cannot go on holds
 * back those behind it, except one waiting for its rendezvous answer, whose
 * request is already out. Replies (acks, read data, rendezvous answers) pass
 * an operation that cannot go on: that one may be waiting for a reply from
 * the peer, whose own queue may wait for ours.
 */
void bolt_transmit_progress(struct bolt_connection *connection)
{
	struct bolt_transmit *transmit, *next;
	bool blocked = false, stripes_wait;

	/* Until then, the connection may have no link yet. */
	if (connection->state != BOLT_CONNECTION_ESTABLISHED)
		return;
	/*
	 * UC loses a stripe on a cut cable without a word: the ports' news before
	 * stripes go (here, ahead of the loop: what the news sends may progress too).
	 * Only with something to send: the look reads the precise clock, a quarter
	 * of an idle progress call's time.
	 */
	if (bolt_peer_of(connection)->transmits && bolt_connection_unreliable(connection) &&
	    bolt_data_rail_ready(connection, false))
		bolt_data_rail_watch_ports_soon(connection->manager->domain);
	/* The news may be that its control rail has had no path for the liveness time. */
	if (connection->state != BOLT_CONNECTION_ESTABLISHED)
		return;
	/*
	 * Stripes of a failed rail first: their transfers are under way. While
	 * some cannot go, only what passes everything may (RC: the answer with a
	 * key, which the peer's own flushed writes may wait for).
	 */
	stripes_wait = !bolt_failover_progress(connection);
	if (connection->state != BOLT_CONNECTION_ESTABLISHED)
		return;
	DL_FOREACH_SAFE(bolt_peer_of(connection)->transmits, transmit, next) {
		if ((blocked && !transmit->internal) ||
		    (stripes_wait && bolt_link_numbered(connection, transmit->op)))
			continue;
		/*
		 * Its turn: the receive the peer granted it, if one came, before it
		 * asks; and before it is judged, since a granted message need not
		 * wait for the granted ones ahead of it to land.
		 */
		if (!transmit->posted_last && transmit->message_number > bolt_peer_of(connection)->messages_posted)
			bolt_receive_grant_use(connection, transmit);
		while (!transmit->posted_last && bolt_transmit_may_go(connection, transmit)) {
			if (bolt_transmit_writing(transmit) && transmit->rail_mask) {
				if (!bolt_transmit_stripes(connection, transmit))
					break;
			} else if (!bolt_transmit_keys_here(connection, transmit)) {
				break;
			} else if (!bolt_link_can_send_op(connection, transmit->op,
							      bolt_transmit_spare_credits(transmit),
							      bolt_transmit_slots(connection, transmit))) {
				break;
			} else if (!bolt_transmit_segment(connection, transmit)) {
				return;
			}
			/* A failed post ended every transmit, next included. */
			if (connection->state == BOLT_CONNECTION_FAILED)
				return;
		}
		if (!transmit->posted_last && !transmit->internal && !bolt_transmit_waiting(transmit))
			blocked = true;
	}
	bolt_link_return_credits(connection);
}

/*
 * The write phase across data rails: one stripe per rail of the mask, each
 * an RDMA write whose immediate data names the transfer to the target, which
 * posted a receive for it on that rail. Shares differ by a byte at most.
 */
bool bolt_transmit_stripes(struct bolt_connection *connection, struct bolt_transmit *transmit)
{
	struct bolt_domain *domain = connection->manager->domain;
	uint32_t mask = transmit->rail_mask, on_rails;
	size_t count = (size_t) __builtin_popcount(mask), offset = 0, stripe = 0;

	/* Rails of the mask that failed since the answer: their stripes go on the control rail. */
	on_rails = mask & bolt_data_rail_usable(connection, false);
	if ((bolt_data_rail_usable(connection, true) & on_rails) != on_rails ||
	    domain->control_pool.free_count < count)
		return false;
	for (int rail = 0; rail < BOLT_MAX_CONNECTION_RAILS; rail++) {
		struct bolt_control_buffer *record;
		struct ibv_mr *mr;
		struct ibv_sge sge;
		int ret;

		if (!(mask & (1u << rail)))
			continue;
		sge.addr = (uintptr_t) transmit->iov[0].iov_base + offset;
		sge.length = (uint32_t) (transmit->target_length / count +
					 (stripe < transmit->target_length % count));
		offset += sge.length;
		stripe++;
		/* Registered on the rail's port when the answer came, or now if it failed then. */
		mr = (on_rails & (1u << rail)) ?
		     bolt_registration_rail_mr(connection, rail, &transmit->registration,
					       transmit->iov[0].iov_base, transmit->target_length) : NULL;
		if (!mr) {
			transmit->moved_rails |= 1u << rail;
			continue;
		}
		sge.lkey = mr->lkey;
		record = bolt_control_buffer_get(domain);
		record->work.handle = bolt_transmit_send_completed;
		record->operation = transmit;
		ret = bolt_data_rail_post_write(connection, rail, record, &sge,
						transmit->target_address + sge.addr -
						(uintptr_t) transmit->iov[0].iov_base,
						transmit->rail_rkeys[rail],
						bolt_rendezvous_immediate(connection, transmit->request_id,
									  transmit->op == BOLT_WIRE_READ_RESPONSE));
		if (ret) {
			bolt_control_buffer_put(domain, record);
			bolt_connection_fail(connection, FI_EIO, strerror(ret));
			return true;
		}
		transmit->in_flight++;
	}
	transmit->sent = transmit->length;
	bolt_transmit_posted_all(transmit);
	/* The stripes moved to the control rail go now, or at the next progress. */
	if (transmit->moved_rails)
		bolt_failover_progress(connection);
	return true;
}

struct bolt_transmit *bolt_transmit_internal(struct bolt_connection *connection, enum bolt_wire_op op,
					     uint64_t request_id, uint32_t status)
{
	struct bolt_transmit *transmit = bolt_allocate_zeroed(sizeof(*transmit));

	if (!transmit) {
		bolt_connection_fail(connection, FI_ENOMEM, "no memory for a protocol message");
		return NULL;
	}
	transmit->op = op;
	transmit->connection = connection;
	transmit->internal = true;
	transmit->request_id = request_id;
	transmit->cq_data = status;
	return transmit;
}

int bolt_transmit_attach(struct bolt_transmit *transmit, const void *payload, size_t length)
{
	if (length > BOLT_SEGMENT_PAYLOAD)
		return -FI_EINVAL;
	transmit->inject_copy = malloc(length ? length : 1);
	if (!transmit->inject_copy)
		return -FI_ENOMEM;
	memcpy(transmit->inject_copy, payload, length);
	transmit->iov[0].iov_base = transmit->inject_copy;
	transmit->iov[0].iov_len = length;
	transmit->iov_count = 1;
	return 0;
}

int bolt_transmit_detach(struct bolt_transmit *transmit)
{
	struct bolt_domain *domain = transmit->connection->manager->domain;
	char *copy;

	if (transmit->posted_last || transmit->inject_copy)
		return 0;
	/* Not yet written, nor registered: segments of the copy. */
	if (transmit->protocol == BOLT_PROTOCOL_BOUNCE)
		transmit->protocol = BOLT_PROTOCOL_EAGER;
	copy = malloc(transmit->length ? transmit->length : 1);
	if (!copy)
		return -FI_ENOMEM;
	bolt_iov_copy_out(transmit->iov, transmit->iov_count, 0, copy, transmit->length);
	bolt_pull_withdraw(transmit);
	/*
	 * Answered or granted but not yet written: segments of the copy instead,
	 * as when registering fails; those are acknowledged.
	 */
	if (bolt_transmit_writing(transmit) || transmit->protocol == BOLT_PROTOCOL_DIRECT_WRITE) {
		bolt_registration_release(domain, &transmit->registration, transmit->covered);
		transmit->reply_pending = transmit->protocol == BOLT_PROTOCOL_DIRECT_WRITE ||
					  transmit->reply_pending;
		transmit->rail_mask = 0;
		transmit->protocol = BOLT_PROTOCOL_EAGER;
		transmit->sent = 0;
	}
	transmit->inject_copy = copy;
	transmit->iov[0].iov_base = copy;
	transmit->iov[0].iov_len = transmit->length;
	transmit->iov_count = 1;
	transmit->covered = false;
	return 0;
}

void bolt_transmit_free(struct bolt_transmit *transmit)
{
	free(transmit->inject_copy);
	free(transmit);
}

void bolt_transmit_check_done(struct bolt_transmit *transmit)
{
	struct bolt_connection *connection = transmit->connection;

	if (!transmit->posted_last || transmit->in_flight || transmit->reply_pending ||
	    transmit->moved_rails)
		return;
	DL_DELETE(bolt_peer_of(connection)->posted, transmit);
	bolt_registration_release(connection->manager->domain, &transmit->registration,
				   transmit->covered);
	if (transmit->internal)
		bolt_transmit_free(transmit);
	else
		bolt_endpoint_complete_transmit(bolt_connection_endpoint(connection), transmit);
}

void bolt_transmit_send_completed(struct bolt_work_completion *work, const struct ibv_wc *wc)
{
	struct bolt_control_buffer *record = bolt_control_buffer_of_work(work);
	struct bolt_transmit *transmit = record->operation;
	struct bolt_connection *connection;

	if (!record->posted || bolt_failover_stripe_failed(record, wc))
		return;
	connection = bolt_link_send_completed(record, wc);
	if (!connection)
		return;
	if (transmit) {
		/* A granted message has landed (bolt_transmit_write_again_when_lost). */
		if (transmit->protocol == BOLT_PROTOCOL_GRANTED_RECEIVE && bolt_rewrite_applies(connection))
			bolt_peer_of(connection)->granted_landing--;
		transmit->in_flight--;
		bolt_transmit_check_done(transmit);
	}
	bolt_transmit_progress(connection);
}

void bolt_transmit_orphaned(struct bolt_control_buffer *record)
{
	struct bolt_transmit *transmit = record->operation;

	/* The device reads its buffer until the send completes: the registration stays till then. */
	if (!transmit->in_flight)
		return;
	record->registration = transmit->registration;
	record->covered = transmit->covered;
	record->holds_registration = true;
	memset(&transmit->registration, 0, sizeof(transmit->registration));
}

/* A direct write into a region the target granted, a bounce, a rendezvous, or (none) segments. */
static void bolt_transmit_choose_protocol(struct bolt_connection *connection,
					  struct bolt_transmit *transmit)
{
	transmit->protocol = BOLT_PROTOCOL_EAGER;
	transmit->reply_pending = transmit->op == BOLT_WIRE_WRITE ||
				  transmit->op == BOLT_WIRE_READ_REQUEST;
	/* A write into a region the target granted needs no request, nor a message written whole. */
	if (bolt_direct_write_prepare(transmit))
		return;
	if (bolt_bounce_wanted(transmit)) {
		transmit->protocol = BOLT_PROTOCOL_BOUNCE;
		return;
	}
	/* Nor one whose receiver grants its receive ahead: it waits for that (bolt_tag_grant.c). */
	if (transmit->grant_awaited && bolt_rendezvous_wanted(transmit)) {
		transmit->protocol = BOLT_PROTOCOL_RENDEZVOUS;
		transmit->phase = BOLT_RENDEZVOUS_WAIT;
		bolt_data_rail_request(connection);
		return;
	}
	if (bolt_rendezvous_wanted(transmit)) {
		transmit->protocol = BOLT_PROTOCOL_RENDEZVOUS;
		transmit->phase = BOLT_RENDEZVOUS_ASK;
		/* Asked for ahead of the request, so its answer can name them. */
		bolt_data_rail_request(connection);
	}
}

void bolt_transmit_ask_instead(struct bolt_connection *connection, struct bolt_transmit *transmit)
{
	bolt_registration_release(connection->manager->domain, &transmit->registration, transmit->covered);
	if (transmit->protocol == BOLT_PROTOCOL_GRANTED_RECEIVE) {
		transmit->protocol = BOLT_PROTOCOL_RENDEZVOUS;
		transmit->phase = BOLT_RENDEZVOUS_ASK;
		return;
	}
	transmit->plain_write = false;
	bolt_transmit_choose_protocol(connection, transmit);
}

void bolt_transmit_revoked(struct bolt_connection *connection, uint64_t key)
{
	struct bolt_transmit *transmit;

	DL_FOREACH(bolt_peer_of(connection)->transmits, transmit)
		if (transmit->protocol == BOLT_PROTOCOL_DIRECT_WRITE && transmit->remote_key == key)
			bolt_transmit_ask_instead(connection, transmit);
}

uint64_t bolt_transmit_next_id(uint64_t *next_id)
{
	/* Stripes name their transfer by its low bits; 0 names none (a direct write). */
	if (*next_id & BOLT_REQUEST_ID_GRANTED)
		*next_id += BOLT_REQUEST_ID_GRANTED;
	if (!(*next_id & BOLT_IMMEDIATE_ID))
		(*next_id)++;
	return (*next_id)++;
}

void bolt_transmit_start(struct bolt_transmit *transmit)
{
	struct bolt_connection *connection = transmit->connection;

	if (!transmit->internal) {
		transmit->request_id = bolt_transmit_next_id(&bolt_peer_of(connection)->next_request_id);
		/* Numbered as the peer counts them, for the receives it grants ahead. */
		if (transmit->op == BOLT_WIRE_MESSAGE && !(transmit->flags & FI_TAGGED))
			transmit->message_number = ++bolt_peer_of(connection)->messages_started;
		if (transmit->op == BOLT_WIRE_READ_REQUEST)
			bolt_rendezvous_read_prepare(transmit);
		bolt_transmit_choose_protocol(connection, transmit);
		if (bolt_transmit_waiting(transmit)) {
			bolt_tag_grant_await(connection, transmit);
			return;
		}
	}
	bolt_transmit_queue(transmit, false);
}

void bolt_transmit_queue(struct bolt_transmit *transmit, bool ahead)
{
	struct bolt_connection *connection = transmit->connection;
	struct bolt_transmit *behind = NULL;

	/* Ahead of all but those queued ahead before it, which keep their order. */
	if (ahead)
		for (behind = bolt_peer_of(connection)->transmits; behind && behind->ahead;
		     behind = behind->next)
			;
	transmit->ahead = ahead;
	if (behind)
		DL_PREPEND_ELEM(bolt_peer_of(connection)->transmits, behind, transmit);
	else
		DL_APPEND(bolt_peer_of(connection)->transmits, transmit);
	if (connection->state == BOLT_CONNECTION_FAILED) {
		bolt_transmit_fail_all(connection);
		return;
	}
	bolt_transmit_progress(connection);
}

/* A reply (ack or read data) to request_id, or a pending operation waiting for one. */
struct bolt_transmit *bolt_transmit_find_request(struct bolt_connection *connection,
						 enum bolt_wire_op op, uint64_t request_id)
{
	struct bolt_transmit *transmit;

	DL_FOREACH(bolt_peer_of(connection)->posted, transmit)
		if (!transmit->internal && transmit->op == op && transmit->request_id == request_id &&
		    transmit->reply_pending)
			return transmit;
	return NULL;
}

void bolt_transmit_reply_arrived(struct bolt_transmit *transmit, int status)
{
	if (status && !transmit->status)
		transmit->status = status;
	transmit->reply_pending = false;
	bolt_transmit_check_done(transmit);
}

void bolt_transmit_resume(struct bolt_connection *connection, struct bolt_transmit *transmit)
{
	struct bolt_transmit *later;

	DL_DELETE(bolt_peer_of(connection)->waiting, transmit);
	/* Ahead of the operations started after it, as it was. */
	DL_FOREACH(bolt_peer_of(connection)->transmits, later)
		if (!later->internal && later->request_id > transmit->request_id)
			break;
	if (later)
		DL_PREPEND_ELEM(bolt_peer_of(connection)->transmits, later, transmit);
	else
		DL_APPEND(bolt_peer_of(connection)->transmits, transmit);
}

struct bolt_transmit *bolt_transmit_answered(struct bolt_connection *connection, uint64_t request_id)
{
	struct bolt_transmit *transmit;

	DL_FOREACH(bolt_peer_of(connection)->waiting, transmit)
		if (transmit->request_id == request_id && !transmit->grant_awaited)
			break;
	if (transmit)
		bolt_transmit_resume(connection, transmit);
	return transmit;
}

/* Ends the operations of list: with the connection's error, or, report false, silently. */
static void bolt_transmit_end_list(struct bolt_connection *connection, struct bolt_transmit **list,
				   bool report)
{
	struct bolt_transmit *transmit, *next;

	DL_FOREACH_SAFE(*list, transmit, next) {
		DL_DELETE(*list, transmit);
		bolt_registration_release(connection->manager->domain, &transmit->registration,
					   transmit->covered);
		if (transmit->internal || !report) {
			bolt_transmit_free(transmit);
			continue;
		}
		transmit->status = connection->error ? connection->error : FI_EIO;
		bolt_endpoint_complete_transmit(bolt_connection_endpoint(connection), transmit);
	}
}

void bolt_transmit_fail_all(struct bolt_connection *connection)
{
	bolt_peer_of(connection)->streaming = NULL;
	bolt_transmit_end_list(connection, &bolt_peer_of(connection)->waiting, true);
	bolt_transmit_end_list(connection, &bolt_peer_of(connection)->transmits, true);
	bolt_transmit_end_list(connection, &bolt_peer_of(connection)->posted, true);
}

void bolt_transmit_discard_all(struct bolt_connection *connection)
{
	bolt_peer_of(connection)->streaming = NULL;
	bolt_transmit_end_list(connection, &bolt_peer_of(connection)->waiting, false);
	bolt_transmit_end_list(connection, &bolt_peer_of(connection)->transmits, false);
	bolt_transmit_end_list(connection, &bolt_peer_of(connection)->posted, false);
}
