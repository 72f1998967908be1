/*
 * bolt_link_move.c: a link whose port goes down (its cable cut, or this
 * end's port) moves to another pair of ports, with every connection on it,
 * so that the application sees no error while a cable to the peer remains.
 *
 * The move makes a new link (bolt_link_create on another port that is up:
 * a queue pair, its receives and bounce buffers there) and agrees on it
 * over the side channel, which no cable carries: the end that noticed (a
 * port event, or an error completion on the link) asks (ASK, its new queue
 * pair), the peer makes its own, connects it and answers (ANSWER), the
 * asker connects and says so (CONNECTED); both ask at once when a cut
 * cable takes down both ports, and the smaller domain id's question wins.
 * Before its connections leave the old link, each end puts the old queue
 * pair in ERR and polls the device: what the peer delivered on it is taken,
 * in order, before anything on the new link; the new link takes no new
 * message until the old one's sends all came back. Then:
 *   - UC: what the old link lost is sent again by go-back-N
 *     (bolt_retransmit.c), whose copies and sequence numbers are the
 *     connection's, not the link's;
 *   - RC: a send that came back flushed (or retry exceeded) may have
 *     arrived all the same, its acknowledgement lost with the cable. Each
 *     end says in the move (ANSWER, CONNECTED) how many of the other's
 *     transmissions it took on the old queue pair, after it drained it:
 *     those that arrived are completed as sent; the others (a message, a
 *     write and its message, a write alone) are posted again on the new
 *     link, once, in the order they were posted, messages with their
 *     sequence numbers, before any new send. A write takes the target's
 *     key on the new port first (events->write_keys, which asks it with
 *     STRIPE_KEY_ASK: on RC such questions and their answers carry no
 *     sequence number, so they pass what waits to be sent again).
 * The new link has its own credits and receives: a new queue pair starts
 * with the peer's receive depth. The old link is retired once its sends are
 * back. A port that comes back is used again for data rails and new links;
 * a moved link stays where it is.
 */
#include <stdio.h>
#include <string.h>
#include <utlist.h>

#include "connection/bolt_link_move.h"
#include "rails/bolt_qp.h"

/* A connection of link whose side channel can carry the move: the same slot at both ends. */
static struct bolt_connection *bolt_link_move_speaker(const struct bolt_link *link)
{
	for (int slot = 0; slot < BOLT_LINK_SLOTS; slot++) {
		struct bolt_connection *connection = bolt_link_connection(link, (uint8_t) slot);

		if (connection && connection->stream && connection->state == BOLT_CONNECTION_ESTABLISHED)
			return connection;
	}
	return NULL;
}

/* connection's handshake, describing successor as the link (and the peer's port to use). */
static void bolt_link_move_describe(const struct bolt_connection *connection,
				    const struct bolt_link *successor, struct bolt_handshake *handshake)
{
	bolt_connection_handshake_fill(connection, handshake);
	bolt_link_describe(successor, handshake);
	handshake->peer_port = (uint8_t) successor->peer_port;
}

/* successor takes over from link: link's queue pair goes to ERR, so that nothing more crosses it. */
static void bolt_link_move_begin(struct bolt_link *link, struct bolt_link *successor, int peer_port,
				 const char *why)
{
	link->successor = successor;
	link->retiring = true;
	successor->predecessor = link;
	successor->peer_port = peer_port;
	successor->awaiting_peer = true;
	FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
		"control rail on %s:%u to the peer's port %d failed (%s): moving to %s:%u, the peer's port %d\n",
		link->port->device.name, link->port->port.port_num, link->peer_port, why,
		successor->port->device.name, successor->port->port.port_num, peer_port);
	bolt_qp_error(&link->domain->fabric->verbs, link->qp);
}

/* The move is not made after all (the peer's question won): the new link goes. */
static void bolt_link_move_abandon(struct bolt_link *link)
{
	struct bolt_link *successor = link->successor;

	link->successor = NULL;
	link->move_asked = false;
	successor->predecessor = NULL;
	bolt_link_retire(successor);
}

bool bolt_link_move_start(struct bolt_link *link, const char *why)
{
	struct bolt_domain *domain = link->domain;
	struct bolt_connection *speaker = bolt_link_move_speaker(link);
	struct bolt_link *successor = NULL;
	struct bolt_handshake ask;
	int index, ret;

	if (!speaker || link->successor || link->moved || link->failing || !link->qp ||
	    !link->established)
		return false;
	for (index = 0; index < bolt_link_port_count(domain) && !successor; index++) {
		if (index == bolt_link_port_index(link) || bolt_link_port_of_index(domain, index)->down)
			continue;
		if (bolt_link_create(domain, index, link->peer_domain_id, &successor))
			successor = NULL;
	}
	if (!successor)
		return false;
	/* The peer's port of the same number: cables join ports of one number (no probe yet). */
	bolt_link_move_begin(link, successor, index - 1, why);
	bolt_link_move_describe(speaker, successor, &ask);
	ret = bolt_side_channel_send(speaker->stream, BOLT_LINK_MOVE_ASK, &ask, sizeof(ask));
	if (ret) {
		bolt_link_move_abandon(link);
		bolt_link_fail(link, -ret, "asking the peer to move the control rail failed");
		return true;
	}
	link->move_asked = true;
	return true;
}

void bolt_link_move_port_changed(struct bolt_domain *domain, const struct bolt_rail_port *port)
{
	struct bolt_link *link, *next;

	if (!port->down)
		return;
	DL_FOREACH_SAFE(domain->links, link, next)
		if (link->port == port)
			bolt_link_move_start(link, "port down");
}

bool bolt_link_move_may_send(const struct bolt_link *link, bool passing)
{
	const struct bolt_link *old = link->predecessor;

	return !link->successor && !link->awaiting_peer &&
	       (passing || !(old && (old->outstanding_sends > 0 || old->resend_head)));
}

/* The old link retires once every send posted on it came back and was sent again. */
static void bolt_link_move_drained(struct bolt_link *link)
{
	if (link->moved && link->outstanding_sends <= 0 && !link->resend_head)
		bolt_link_retire(link);
}

void bolt_link_move_unlink(struct bolt_link *link)
{
	struct bolt_link *successor = link->successor, *predecessor = link->predecessor;

	link->successor = NULL;
	link->predecessor = NULL;
	if (predecessor) {
		predecessor->successor = NULL;
		bolt_link_retire(predecessor);
	}
	if (successor) {
		successor->predecessor = NULL;
		if (!link->moved)
			bolt_link_retire(successor);
	}
}

/* Whether the peer took record's transmission on old before the move (a plain write: the next one). */
static bool bolt_link_move_arrived(const struct bolt_link *old, const struct bolt_control_buffer *record)
{
	return (int32_t) (old->peer_arrivals - record->link_sequence) > 0;
}

/* record, which came back flushed from old, had arrived: its owner hears of it as of a success. */
static void bolt_link_move_replay(struct bolt_control_buffer *record)
{
	struct ibv_wc wc = {
		.wr_id = (uintptr_t) &record->work,
		.status = IBV_WC_SUCCESS,
		.opcode = record->message_length ? IBV_WC_SEND : IBV_WC_RDMA_WRITE,
	};

	record->replayed = true;
	record->work.handle(&record->work, &wc);
}

/* Room on its connection's link for record again. */
static bool bolt_link_move_has_room(const struct bolt_control_buffer *record)
{
	bool takes_receive = record->message_length ||
			     (record->write.present && record->write.opcode == IBV_WR_RDMA_WRITE_WITH_IMM);

	return bolt_link_can_send_again(record->connection, record->send_slots, takes_receive);
}

/*
 * record's write, if it has one, into write and data, with the keys on the
 * port of its connection's link: 0, 1 while they are asked for, or a
 * negative error code (its connection failed).
 */
static int bolt_link_move_write_keys(struct bolt_control_buffer *record, struct ibv_send_wr *write,
				     struct ibv_sge *data)
{
	struct bolt_connection *connection = record->connection;
	const struct bolt_posted_write *kept = &record->write;
	int ret;

	if (!kept->present)
		return 0;
	ret = connection->manager->events->write_keys(connection, record, &data->lkey, &write->wr.rdma.rkey);
	if (ret < 0)
		bolt_connection_fail(connection, FI_EIO,
				     "a write that came back flushed has no keys on the control rail's new port");
	if (ret)
		return ret;
	data->addr = kept->address;
	data->length = kept->length;
	write->sg_list = data;
	write->num_sge = 1;
	write->opcode = kept->opcode;
	write->imm_data = kept->immediate;
	write->wr.rdma.remote_addr = kept->remote_address;
	return 0;
}

/* Posts record on link as it was on the old one: its write (described, keys and all), its message. */
static void bolt_link_move_post_again(struct bolt_link *link, struct bolt_control_buffer *record,
				      struct ibv_send_wr *write)
{
	struct ibv_sge message = {
		.addr = (uintptr_t) bolt_control_buffer_data(link->domain, record),
		.length = record->message_length,
		.lkey = link->port->control_mr->lkey,
	};
	struct ibv_send_wr send = { .sg_list = &message, .num_sge = 1, .opcode = IBV_WR_SEND };

	if (!record->message_length)
		bolt_link_post(record->connection, record, write, NULL, record->work.handle);
	else
		bolt_link_post(record->connection, record, &send, record->write.present ? write : NULL,
			       record->work.handle);
}

/* The first of old's flushed sends, taken off its list. */
static struct bolt_control_buffer *bolt_link_move_take(struct bolt_link *old)
{
	struct bolt_control_buffer *record = old->resend_head;

	old->resend_head = record->resend_next;
	if (!old->resend_head)
		old->resend_tail = NULL;
	record->resend_next = NULL;
	return record;
}

void bolt_link_move_resend(struct bolt_link *link)
{
	struct bolt_link *old;
	int resent = 0, arrived = 0;

	while ((old = link->predecessor) && old->resend_head && !link->awaiting_peer && link->qp) {
		struct bolt_control_buffer *record = old->resend_head;
		struct bolt_connection *connection = record->connection;
		struct ibv_send_wr write = { 0 };
		struct ibv_sge data;
		int keys;

		/* Its connection left (its sends were orphaned), failed, or moved on. */
		if (!connection || connection->state != BOLT_CONNECTION_ESTABLISHED || connection->link != link) {
			bolt_control_buffer_put(link->domain, bolt_link_move_take(old));
		} else if (bolt_link_move_arrived(old, record)) {
			bolt_link_move_take(old);
			bolt_link_move_replay(record);
			arrived++;
		} else if (!bolt_link_move_has_room(record)) {
			break;
		} else if ((keys = bolt_link_move_write_keys(record, &write, &data)) > 0) {
			break;
		} else if (!keys) {
			bolt_link_move_post_again(link, bolt_link_move_take(old), &write);
			resent++;
		}
	}
	if (resent || arrived)
		FI_INFO(&bolt_prov, FI_LOG_EP_CTRL,
			"of the sends that came back flushed, %d had arrived, %d sent again on %s:%u\n",
			arrived, resent, link->port->device.name, link->port->port.port_num);
	if ((old = link->predecessor))
		bolt_link_move_drained(old);
}

/* Whether a send that came back with an error can be posted again: RC, a message or a write. */
static bool bolt_link_move_resendable(const struct bolt_control_buffer *record)
{
	const struct bolt_connection *connection = record->connection;

	return connection && connection->state == BOLT_CONNECTION_ESTABLISHED &&
	       !bolt_connection_unreliable(connection) && (record->message_length || record->write.present);
}

struct bolt_connection *bolt_link_move_send_completed(struct bolt_control_buffer *record,
						      const struct ibv_wc *wc)
{
	struct bolt_link *link = record->link;
	struct bolt_connection *connection = record->connection;
	struct bolt_domain *domain = link->domain;
	bool failed = wc->status != IBV_WC_SUCCESS, replayed = record->replayed;
	bool write_lost = failed && record->write.present && connection &&
			  !bolt_connection_unreliable(connection);

	/* A replayed one's entries were given back when it came back flushed. */
	if (!replayed)
		link->outstanding_sends -= record->send_slots;
	if (failed && bolt_link_move_resendable(record)) {
		if (link->resend_tail)
			link->resend_tail->resend_next = record;
		else
			link->resend_head = record;
		link->resend_tail = record;
		if (link->moved)
			bolt_link_move_resend(link->successor);
		return NULL;
	}
	bolt_control_buffer_put(domain, record);
	/* The resend that replays it goes on by itself. */
	if (link->moved && link->successor && !replayed)
		bolt_link_move_resend(link->successor);
	if (!connection || connection->state == BOLT_CONNECTION_FAILED)
		return NULL;
	if (write_lost) {
		bolt_connection_fail(connection, FI_EIO, "a write on the control rail was lost with its cable");
		return NULL;
	}
	return connection;
}

/* The connections of link go to its successor, with their slots. */
static void bolt_link_move_switch(struct bolt_link *link)
{
	struct bolt_link *successor = link->successor;

	for (int slot = 0; slot < BOLT_LINK_SLOTS; slot++) {
		struct bolt_connection *connection = link->slots[slot];

		if (!connection)
			continue;
		link->slots[slot] = NULL;
		link->users--;
		successor->slots[slot] = connection;
		successor->users++;
		connection->link = successor;
	}
	successor->next_slot = link->next_slot;
	successor->established = true;
	link->moved = true;
}

/* Both ends are connected on the new link: what waits goes, flushed messages first. */
static void bolt_link_move_finish(struct bolt_link *link)
{
	link->awaiting_peer = false;
	FI_INFO(&bolt_prov, FI_LOG_EP_CTRL, "control rail moved to %s:%u\n", link->port->device.name,
		link->port->port.port_num);
	bolt_link_move_resend(link);
	bolt_link_progress(link);
}

/* Connects successor to the queue pair handshake describes; 0 or a negative error. */
static int bolt_link_move_connect(struct bolt_link *successor, const struct bolt_handshake *handshake)
{
	struct bolt_peer_bounce bounce = {
		.address = handshake->bounce_address,
		.rkey = handshake->bounce_rkey,
		.size = handshake->bounce_size,
	};

	return bolt_link_connect(successor, handshake->qpn, handshake->psn, handshake->gid,
				 handshake->receive_depth, &bounce);
}

/* Takes, in order, what the peer delivered on the old queue pair; false if the link failed meanwhile. */
static bool bolt_link_move_drain(struct bolt_connection *connection, struct bolt_link *link)
{
	bolt_domain_poll_device(connection->manager->domain);
	return connection->state == BOLT_CONNECTION_ESTABLISHED && connection->link == link &&
	       link->successor;
}

/* Connects successor to the peer's queue pair in handshake, then switches to it: false if the link failed. */
static bool bolt_link_move_connect_and_switch(struct bolt_connection *connection, struct bolt_link *link,
					      struct bolt_link *successor,
					      const struct bolt_handshake *handshake)
{
	int ret = bolt_link_move_connect(successor, handshake);

	if (ret) {
		bolt_link_fail(link, -ret, "connecting the moved control rail failed");
		return false;
	}
	if (!bolt_link_move_drain(connection, link))
		return false;
	bolt_link_move_switch(link);
	return true;
}

/* The peer asks: our own question loses to it unless our domain id is the smaller. */
static void bolt_link_move_answer(struct bolt_connection *connection, const struct bolt_handshake *ask)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct bolt_link *link = connection->link, *successor;
	uint32_t refusal = FI_EHOSTUNREACH;
	struct bolt_handshake answer;
	int ret;

	if (link->moved || (link->successor && link->move_asked && domain->domain_id < ask->domain_id))
		return;
	if (ask->peer_port >= bolt_link_port_count(domain) ||
	    bolt_link_port_of_index(domain, ask->peer_port)->down ||
	    bolt_link_create(domain, ask->peer_port, link->peer_domain_id, &successor)) {
		/*
		 * No port up here yet (both cables cut?): the asker asks again while
		 * it may. A move of our own stays meanwhile: its old queue pair's
		 * sends come back to it.
		 */
		ret = bolt_side_channel_send(connection->stream, BOLT_LINK_MOVE_ANSWER, &refusal,
					     sizeof(refusal));
		if (ret)
			bolt_link_fail(link, -ret, "refusing the peer's move of the control rail failed");
		return;
	}
	/* The peer's question wins over ours. */
	if (link->successor)
		bolt_link_move_abandon(link);
	bolt_link_move_begin(link, successor, ask->port, "the peer asked");
	if (!bolt_link_move_connect_and_switch(connection, link, successor, ask))
		return;
	bolt_link_move_describe(connection, successor, &answer);
	/* Drained: what of the asker's arrived on the old queue pair is all that ever will. */
	answer.arrivals = link->arrivals;
	ret = bolt_side_channel_send(connection->stream, BOLT_LINK_MOVE_ANSWER, &answer, sizeof(answer));
	if (ret)
		bolt_link_fail(successor, -ret, "answering the peer's move failed");
}

/* The peer answered our question: connect, and both may send. */
static void bolt_link_move_answered(struct bolt_connection *connection, const struct bolt_handshake *answer)
{
	struct bolt_link *link = connection->link, *successor = link->successor;
	uint32_t arrivals;
	int ret;

	link->peer_arrivals = answer->arrivals;
	if (!bolt_link_move_connect_and_switch(connection, link, successor, answer))
		return;
	arrivals = link->arrivals;
	ret = bolt_side_channel_send(connection->stream, BOLT_LINK_MOVE_CONNECTED, &arrivals,
				     sizeof(arrivals));
	if (ret) {
		bolt_link_fail(successor, -ret, "telling the peer the control rail moved failed");
		return;
	}
	bolt_link_move_finish(successor);
}

/* Asking again for a refused move: at most this often. */
#define BOLT_LINK_MOVE_ASK_AGAIN_NS (100ULL * 1000000ULL)

/* The peer has no port up for the move yet: ask again soon, while the liveness time lasts. */
static void bolt_link_move_refused(struct bolt_link *link)
{
	uint64_t now = bolt_connection_now_ns();

	if (!link->move_refused_ns) {
		link->move_refused_ns = now;
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
			"the peer has no port up for the control rail yet: asking again for up to %d ms\n",
			link->domain->fabric->params.liveness_timeout);
	}
	link->move_ask_again_ns = now + BOLT_LINK_MOVE_ASK_AGAIN_NS;
}

/* Asks the peer again for the move it refused; false if the link failed. */
static bool bolt_link_move_ask_again(struct bolt_link *link)
{
	struct bolt_connection *speaker = bolt_link_move_speaker(link);
	struct bolt_handshake ask;
	int ret;

	if (!speaker) {
		bolt_link_fail(link, FI_EHOSTUNREACH, "no side channel left to move the control rail");
		return false;
	}
	bolt_link_move_describe(speaker, link->successor, &ask);
	ret = bolt_side_channel_send(speaker->stream, BOLT_LINK_MOVE_ASK, &ask, sizeof(ask));
	if (ret) {
		bolt_link_fail(link, -ret, "asking the peer to move the control rail failed");
		return false;
	}
	link->move_ask_again_ns = 0;
	return true;
}

void bolt_link_move_progress(struct bolt_domain *domain)
{
	uint64_t now = bolt_connection_now_ns(), liveness_ns = bolt_domain_liveness_ns(domain);
	struct bolt_link *link, *next;

	DL_FOREACH_SAFE(domain->links, link, next) {
		if (!link->move_refused_ns || !link->successor || !link->move_ask_again_ns ||
		    now < link->move_ask_again_ns)
			continue;
		if (now >= link->move_refused_ns + liveness_ns)
			bolt_link_fail(link, FI_EHOSTUNREACH,
				       "the peer had no port for the control rail within the liveness time");
		else
			bolt_link_move_ask_again(link);
	}
}

bool bolt_link_move_handle(struct bolt_connection *connection, uint16_t type, const void *body,
			   uint32_t length)
{
	struct bolt_link *link = connection->link;
	const char *problem = NULL;

	switch (type) {
	case BOLT_LINK_MOVE_ASK:
		problem = bolt_connection_handshake_check(connection->manager, body, length, true);
		if (!problem)
			bolt_link_move_answer(connection, body);
		break;
	case BOLT_LINK_MOVE_ANSWER:
		if (!link->successor || !link->move_asked || link->moved)
			problem = "a move's answer not asked for";
		else if (length == sizeof(uint32_t))
			bolt_link_move_refused(link);
		else if (!(problem = bolt_connection_handshake_check(connection->manager, body, length, true)))
			bolt_link_move_answered(connection, body);
		break;
	case BOLT_LINK_MOVE_CONNECTED:
		if (!link->awaiting_peer || length != sizeof(uint32_t)) {
			problem = "a moved control rail connected that was not moving";
		} else {
			/* The old link retired already if none of its sends came back flushed. */
			if (link->predecessor)
				memcpy(&link->predecessor->peer_arrivals, body, sizeof(uint32_t));
			bolt_link_move_finish(link);
		}
		break;
	default:
		return false;
	}
	if (problem)
		bolt_connection_fail(connection, FI_EPROTO, problem);
	return true;
}
