/*
 * bolt_link_receive.c: receiving on the control rail. Each link keeps
 * receive_depth control buffers posted; every arriving message is checked
 * (op, lengths, credits, then its connection's slot and sequence) before
 * anything in it is trusted, handed to its connection's owner (or, for the
 * data rails' set-up, to bolt_data_rail.c), and its buffer posted again with
 * the next few, which earns the peer credits back on the link. While the
 * owner keeps more of a peer's data than it should (events.over_limit), the
 * buffers that peer's messages took are held back instead: their credits
 * stay here, and the peer waits rather than this process growing without
 * bound.
 */
#include <stdio.h>
#include <string.h>
#include <utlist.h>

#include "connection/bolt_link_move.h"

static void bolt_link_receive_completed(struct bolt_work_completion *work, const struct ibv_wc *wc);

/* Posts count control buffers on link's queue pair in one call. */
static int bolt_link_receive_post(struct bolt_link *link, struct bolt_control_buffer **records,
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
		records[i]->work.handle = bolt_link_receive_completed;
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
 * posted and not returned enough to send them back (bolt_link_send.c).
 * Returns nonzero if the link failed.
 */
static int bolt_link_receive_repost(struct bolt_link *link, struct bolt_control_buffer *record)
{
	link->unposted[link->unposted_count++] = record;
	if (link->unposted_count < BOLT_LINK_REPOST_BATCH)
		return 0;
	if (bolt_link_receive_post(link, link->unposted, link->unposted_count)) {
		link->unposted_count = 0;
		bolt_link_fail(link, FI_EIO, "a receive could not be posted again");
		return -FI_EIO;
	}
	link->credits_to_return += link->unposted_count;
	link->credits_given += link->unposted_count;
	link->unposted_count = 0;
	return 0;
}

/*
 * Whether the receive a message of the application took stays unposted: its
 * credit then stays here, and the peer, which keeps some credits back from
 * such messages for answers, soon waits.
 */
static bool bolt_link_receive_should_hold(const struct bolt_link *link,
					  const struct bolt_connection *connection, bool message)
{
	return message && connection && link->held_count < BOLT_LINK_RECEIVE_DEPTH &&
	       connection->manager->events->over_limit(connection);
}

void bolt_link_receive_release_held(struct bolt_domain *domain)
{
	struct bolt_link *link, *next;

	domain->release_held = false;
	/* A failed post retires the link; its reclaim returns what is still held. */
	/* Not on a queue pair a link moving away put in ERR. */
	DL_FOREACH_SAFE(domain->links, link, next)
		while (link->qp && !link->successor && link->held_count &&
		       !bolt_link_receive_repost(link, link->held[--link->held_count]))
			;
}

int bolt_link_receive_post_initial(struct bolt_link *link)
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
		ret = bolt_link_receive_post(link, &record, 1);
		if (ret)
			return ret;
	}
	return 0;
}

static const char *bolt_link_receive_check_credits(const struct bolt_link *link,
						   const struct bolt_wire_header *header)
{
	return bolt_wire_check_credits(header, link->send_credits, link->peer_credits_seen,
				       link->peer_receive_depth);
}

/* Why a message on link cannot be trusted, or NULL. */
static const char *bolt_link_receive_check(const struct bolt_link *link,
					   const struct bolt_wire_header *header, uint32_t length)
{
	return bolt_wire_check(header, length, link->send_credits, link->peer_credits_seen,
			       link->peer_receive_depth);
}

/*
 * A checked header's link fields: the credits it brings, and the peer's
 * transmissions before it that never arrived (UC lost them): their receives
 * are still posted, so they are given back. The peer's transmissions arrive
 * in order on the queue pair, so the gap is exact.
 */
static void bolt_link_receive_count(struct bolt_link *link, const struct bolt_wire_header *header)
{
	int32_t missing = (int32_t) (header->link_sequence - link->arrivals);

	link->send_credits += bolt_wire_credits_brought(header, link->peer_credits_seen);
	if (bolt_wire_credits_brought(header, link->peer_credits_seen))
		link->peer_credits_seen = header->credits;
	/*
	 * Any number may be missing (a cut cable loses every probe sent without
	 * a credit); a peer that claims more only gives itself credits its
	 * messages will find no receive for.
	 */
	if (missing > (int32_t) link->lost) {
		uint32_t newly = (uint32_t) missing - link->lost;

		link->lost += newly;
		link->credits_given += newly;
		link->credits_to_return += newly;
		/* The peer may have run dry on them: it hears of them at once. */
		link->credits_urgent = true;
	}
}

/*
 * The connection a write with immediate data on link is for: on UC the
 * immediate names its slot, on RC only slot 0 writes with immediate data.
 */
static struct bolt_connection *bolt_link_receive_write_connection(const struct bolt_link *link,
								  const struct ibv_wc *wc)
{
	if (link->qp->qp_type == IBV_QPT_RC)
		return bolt_link_connection(link, 0);
	return bolt_link_connection(link, (uint8_t) ((wc->imm_data & BOLT_IMMEDIATE_SLOT_MASK) >>
						     BOLT_IMMEDIATE_SLOT_SHIFT));
}

/* The transport's own messages stay here; the rest go to the connection's owner. */
static void bolt_link_receive_dispatch(struct bolt_connection *connection,
				       const struct bolt_wire_header *header, const char *payload,
				       size_t payload_length)
{
	switch (header->op) {
	case BOLT_WIRE_CREDIT:
		break;
	case BOLT_WIRE_WRITE_LANDED:
		bolt_rewrite_landed(connection, header);
		break;
	case BOLT_WIRE_RAIL_REQUEST:
	case BOLT_WIRE_RAIL_ANSWER:
	case BOLT_WIRE_RAIL_PROBED:
	case BOLT_WIRE_RAIL_READY:
	case BOLT_WIRE_RAIL_PROBE_SENT:
	case BOLT_WIRE_RAIL_STATE:
		bolt_data_rail_message(connection, header, payload);
		break;
	default:
		connection->manager->events->message(connection, header, payload, payload_length);
	}
}

/*
 * A message for its connection, if that is still there (the peer may not
 * know yet that it left); returns the connection.
 */
static struct bolt_connection *bolt_link_receive_arrived(struct bolt_link *link,
							 const struct bolt_wire_header *header,
							 const char *payload, size_t payload_length)
{
	struct bolt_connection *connection = bolt_link_connection(link, header->slot);

	if (!connection || connection->slot_nonce != header->slot_nonce)
		return NULL;
	bolt_retransmit_acknowledged(connection, header);
	if (header->op == BOLT_WIRE_CREDIT)
		bolt_rewrite_acknowledged(connection, header);
	if (header->op == BOLT_WIRE_CREDIT || connection->state == BOLT_CONNECTION_FAILED)
		return connection;
	/* Without a number (RC: a key's question or answer): it passed what a move sends again. */
	if (!bolt_link_numbered(connection, header->op)) {
		bolt_link_receive_dispatch(connection, header, payload, payload_length);
		return connection;
	}
	/* Out of order (after a loss) or again: dropped, and the rest asked for again. */
	if (!bolt_retransmit_in_order(connection, header))
		return NULL;
	connection->receive_sequence++;
	bolt_link_receive_dispatch(connection, header, payload, payload_length);
	bolt_retransmit_received(connection);
	return connection;
}

/* A receive's buffer that will not be posted again returns; the link may fail with it. */
static void bolt_link_receive_drop(struct bolt_link *link, struct bolt_control_buffer *record,
				   const char *why)
{
	bolt_control_buffer_put(link->domain, record);
	if (why)
		bolt_link_fail(link, FI_EIO, why);
}

static void bolt_link_receive_completed(struct bolt_work_completion *work, const struct ibv_wc *wc)
{
	struct bolt_control_buffer *record = bolt_control_buffer_of_work(work);
	struct bolt_link *link = record->link;
	const struct bolt_wire_header *header;
	struct bolt_wire_header bounced;
	struct bolt_connection *connection;
	const char *problem, *payload;
	bool message = false;

	if (!record->posted)
		return;
	if (!link->qp) {
		bolt_link_receive_drop(link, record, NULL);
		return;
	}
	/* A link that moved away takes nothing more; one moving away flushes its receives. */
	if (link->moved || (wc->status != IBV_WC_SUCCESS && link->successor)) {
		bolt_link_receive_drop(link, record, NULL);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		bolt_link_receive_drop(link, record, link->domain->fabric->verbs.wc_status_str(wc->status));
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
			problem = bolt_link_receive_check_credits(link, &bounced);
		if (problem) {
			bolt_link_receive_drop(link, record, problem);
			return;
		}
		bolt_link_receive_count(link, &bounced);
		message = true;
		connection = bolt_link_receive_arrived(link, &bounced, payload, bounced.total_length);
	} else if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		connection = bolt_link_receive_write_connection(link, wc);
		if (connection && !bolt_rewrite_arrived(connection, wc))
			connection->manager->events->write_landed(connection, wc);
	} else {
		header = (const struct bolt_wire_header *) bolt_control_buffer_data(link->domain, record);
		problem = bolt_link_receive_check(link, header, wc->byte_len);
		if (problem) {
			bolt_link_receive_drop(link, record, problem);
			return;
		}
		bolt_link_receive_count(link, header);
		message = header->op == BOLT_WIRE_MESSAGE;
		connection = bolt_link_receive_arrived(link, header, (const char *) (header + 1),
						       header->payload_length);
	}
	/* Counted after its header's gap was looked at: the gap is of those before it. */
	link->arrivals++;
	/* Handling it may have failed the last connection, and retired the link with it. */
	if (!link->qp) {
		bolt_link_receive_drop(link, record, NULL);
		return;
	}
	/* The payload has been copied out: the buffer can take the next message (not on a queue
	 * pair in ERR, which a link moving away has). */
	if (link->successor)
		bolt_control_buffer_put(link->domain, record);
	else if (bolt_link_receive_should_hold(link, connection, message))
		link->held[link->held_count++] = record;
	else if (bolt_link_receive_repost(link, record))
		return;
	/* A key a moved link's flushed write waited for, or credits for what it sends again. */
	if (link->predecessor)
		bolt_link_move_resend(link);
	/* Its connection returns the credit; with none left there, any other may. */
	if (connection && connection->state != BOLT_CONNECTION_FAILED)
		bolt_rewrite_post(connection);
	if (connection && connection->state != BOLT_CONNECTION_FAILED)
		connection->manager->events->can_send(connection);
	else
		bolt_link_progress(link);
}
