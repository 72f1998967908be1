/*
 * bolt_retransmit.c: messages UC lost, sent again. Every message of a
 * connection carries its sequence number and, going the other way, what
 * the sender has received in order (the header's acknowledged). On UC the
 * sender keeps a copy of each message until it is acknowledged, in a window
 * of BOLT_RETRANSMIT_WINDOW; the receiver takes messages only in order.
 *
 * Go-back-N, not selective: a UC queue pair delivers in order, so a gap
 * means one message lost and everything after it, up to the receiver's
 * word, still on the way, a few messages; keeping those out of order would
 * hold the receiver's buffers, which are the link's credits, and the
 * protocols above handle a peer's messages strictly in order. So the
 * receiver drops what comes after a gap and asks once (a CREDIT with
 * BOLT_WIRE_FLAG_RESEND); the sender sends again from the acknowledged
 * one, and nothing new meanwhile. A lost request or acknowledgement is
 * covered by the timeout: the oldest unacknowledged message sent longer ago
 * than the timeout, measured from round trips (RFC 6298's smoothing, Karn's
 * rule: no sample from a message sent again), doubling while nothing
 * comes. A duplicate is dropped by its sequence: nothing is delivered twice.
 * Acknowledgements ride on every header; a receiver with nothing to say
 * sends a CREDIT after a quarter of the window or a short delay.
 *
 * The link's credits survive losses by themselves (bolt_link_receive.c):
 * a lost transmission's receive is given back once the peer's link
 * sequence shows the gap. A sender whose credits ran out that way sends a
 * probe now and then, which shows it. A connection fails only when its
 * peer acknowledges nothing for FI_BOLT_LIVENESS_TIMEOUT while messages
 * wait; losses alone never fail it. RC does all this itself: nothing is
 * kept there.
 */
#include <stdlib.h>
#include <string.h>

#include "connection/bolt_connection.h"

#define BOLT_RETRANSMIT_INITIAL_TIMEOUT_NS (20ULL * 1000000ULL)
#define BOLT_RETRANSMIT_MIN_TIMEOUT_NS (2ULL * 1000000ULL)
#define BOLT_RETRANSMIT_MAX_TIMEOUT_NS (20ULL * 1000000ULL)
/* A receiver owes an acknowledgement after this many messages, or this long. */
#define BOLT_RETRANSMIT_ACKNOWLEDGE_EVERY (BOLT_RETRANSMIT_WINDOW / 4)
#define BOLT_RETRANSMIT_ACKNOWLEDGE_DELAY_NS (200ULL * 1000ULL)
/* A receiver asks again for a gap's message after this long. */
#define BOLT_RETRANSMIT_ASK_AGAIN_NS (1000ULL * 1000ULL)

/* a comes before b, in sequence arithmetic. */
static bool bolt_retransmit_before(uint32_t a, uint32_t b)
{
	return (int32_t) (a - b) < 0;
}

static bool bolt_retransmit_applies(const struct bolt_connection *connection)
{
	return bolt_connection_unreliable(connection);
}

bool bolt_retransmit_has_room(const struct bolt_connection *connection)
{
	const struct bolt_retransmit *retransmit = &connection->retransmit;

	if (!bolt_retransmit_applies(connection))
		return true;
	/* While sending again, nothing new: it would only arrive out of order. */
	return connection->send_sequence - retransmit->acknowledged < BOLT_RETRANSMIT_WINDOW &&
	       !retransmit->going_back;
}

static bool bolt_retransmit_start(struct bolt_retransmit *retransmit)
{
	if (retransmit->entries)
		return true;
	retransmit->entries = calloc(BOLT_RETRANSMIT_WINDOW, sizeof(*retransmit->entries));
	bolt_round_trip_init(&retransmit->round_trip, BOLT_RETRANSMIT_INITIAL_TIMEOUT_NS,
			     BOLT_RETRANSMIT_MIN_TIMEOUT_NS, BOLT_RETRANSMIT_MAX_TIMEOUT_NS);
	retransmit->rto_ns = retransmit->round_trip.timeout_ns;
	retransmit->resent_from = retransmit->acknowledged - 1;
	return retransmit->entries != NULL;
}

bool bolt_retransmit_keep(struct bolt_connection *connection, const struct bolt_wire_header *header,
			  const struct ibv_send_wr *wr)
{
	struct bolt_retransmit *retransmit = &connection->retransmit;
	struct bolt_retransmit_entry *entry;
	uint32_t length = 0, offset = 0;

	if (!bolt_retransmit_start(retransmit))
		return false;
	for (int i = 0; i < wr->num_sge; i++)
		length += wr->sg_list[i].length;
	entry = &retransmit->entries[header->sequence % BOLT_RETRANSMIT_WINDOW];
	if (entry->capacity < length) {
		char *bytes = realloc(entry->bytes, length);

		if (!bytes)
			return false;
		entry->bytes = bytes;
		entry->capacity = length;
	}
	for (int i = 0; i < wr->num_sge; i++) {
		memcpy(entry->bytes + offset, (const void *) (uintptr_t) wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		offset += wr->sg_list[i].length;
	}
	entry->length = length;
	entry->bounce = wr->opcode != IBV_WR_SEND;
	entry->resent = false;
	entry->sent_ns = bolt_connection_now_ns();
	/* The first waiting for its acknowledgement: the peer's silence is timed from now. */
	if (header->sequence == retransmit->acknowledged)
		retransmit->progress_ns = entry->sent_ns;
	return true;
}

void bolt_retransmit_acknowledging(struct bolt_connection *connection, struct bolt_wire_header *header)
{
	header->acknowledged = connection->receive_sequence;
	connection->retransmit.acknowledgement_sent = connection->receive_sequence;
	connection->retransmit.acknowledgement_due_ns = 0;
}

/* The copy in entry sent again, as it went first: a message, or written whole. */
static bool bolt_retransmit_post(struct bolt_connection *connection,
				 const struct bolt_retransmit_entry *entry)
{
	struct bolt_domain *domain = connection->manager->domain;
	size_t payload = entry->length - sizeof(struct bolt_wire_header);
	struct bolt_control_buffer *record = bolt_control_buffer_get(domain);
	struct ibv_send_wr wr = { 0 };
	struct ibv_sge sge[2];
	struct ibv_mr *mr;
	bool posted;

	if (!record)
		return false;
	record->send_slots = 1;
	memcpy(bolt_control_buffer_data(domain, record), entry->bytes,
	       entry->bounce ? sizeof(struct bolt_wire_header) : entry->length);
	connection->retransmit.resending = true;
	if (!entry->bounce) {
		posted = bolt_link_post_buffer(connection, record, entry->length, NULL,
					       bolt_link_bare_send_completed);
		connection->retransmit.resending = false;
		return posted;
	}
	/* Its data is the application's no more: a copy of its own, registered till it completes. */
	record->resent_payload = malloc(payload);
	if (record->resent_payload) {
		memcpy(record->resent_payload, entry->bytes + sizeof(struct bolt_wire_header), payload);
		record->holds_registration = bolt_registration_acquire(connection, record->resent_payload,
								       payload, &record->registration);
	}
	mr = record->holds_registration ?
	     bolt_registration_link_mr(connection, &record->registration) : NULL;
	if (!mr) {
		connection->retransmit.resending = false;
		bolt_control_buffer_put(domain, record);
		return false;
	}
	bolt_bounce_describe_write(connection->link, record, record->resent_payload, payload, mr->lkey,
				   sge, &wr);
	posted = bolt_link_post(connection, record, &wr, NULL, bolt_link_bare_send_completed);
	connection->retransmit.resending = false;
	return posted;
}

/* Sends again from resend_next on, while the link has room. */
static void bolt_retransmit_resend(struct bolt_connection *connection)
{
	struct bolt_retransmit *retransmit = &connection->retransmit;
	uint64_t now;

	/* Every progress call asks: the clock only when something goes again. */
	if (!retransmit->going_back)
		return;
	now = bolt_connection_now_ns();
	while (retransmit->going_back && connection->state == BOLT_CONNECTION_ESTABLISHED &&
	       bolt_link_can_resend(connection)) {
		struct bolt_retransmit_entry *entry;

		if (bolt_retransmit_before(retransmit->resend_next, retransmit->acknowledged))
			retransmit->resend_next = retransmit->acknowledged;
		if (retransmit->resend_next == connection->send_sequence) {
			retransmit->going_back = false;
			return;
		}
		entry = &retransmit->entries[retransmit->resend_next % BOLT_RETRANSMIT_WINDOW];
		if (!bolt_retransmit_post(connection, entry))
			return;
		entry->resent = true;
		entry->sent_ns = now;
		retransmit->resends++;
		retransmit->resend_next++;
	}
}

/* Sends again from the acknowledged one on. */
static void bolt_retransmit_go_back(struct bolt_retransmit *retransmit)
{
	retransmit->going_back = true;
	retransmit->resend_next = retransmit->acknowledged;
	retransmit->resent_from = retransmit->acknowledged;
}

void bolt_retransmit_acknowledged(struct bolt_connection *connection,
				  const struct bolt_wire_header *header)
{
	struct bolt_retransmit *retransmit = &connection->retransmit;
	uint32_t acknowledged = header->acknowledged;
	struct bolt_retransmit_entry *entry;
	uint64_t now;

	if (!bolt_retransmit_applies(connection) || !retransmit->entries)
		return;
	if (bolt_retransmit_before(connection->send_sequence, acknowledged)) {
		bolt_connection_fail(connection, FI_EPROTO, "the peer acknowledged messages never sent");
		return;
	}
	now = bolt_connection_now_ns();
	if (bolt_retransmit_before(retransmit->acknowledged, acknowledged)) {
		entry = &retransmit->entries[(acknowledged - 1) % BOLT_RETRANSMIT_WINDOW];
		if (!entry->resent && now > entry->sent_ns)
			bolt_round_trip_sample(&retransmit->round_trip, now - entry->sent_ns);
		retransmit->acknowledged = acknowledged;
		retransmit->progress_ns = now;
		/* The peer answers again: the timeout backs off no more (Karn keeps the samples honest). */
		retransmit->rto_ns = retransmit->round_trip.timeout_ns;
	}
	entry = &retransmit->entries[acknowledged % BOLT_RETRANSMIT_WINDOW];
	/*
	 * Asked again for what we already sent again: only once that had time
	 * to arrive (a round trip's timeout, not backed off: the question shows
	 * the peer hears us).
	 */
	if (header->op == BOLT_WIRE_CREDIT && (header->flags & BOLT_WIRE_FLAG_RESEND) &&
	    acknowledged == retransmit->acknowledged && acknowledged != connection->send_sequence &&
	    (retransmit->resent_from != acknowledged ||
	     now >= entry->sent_ns + retransmit->round_trip.timeout_ns))
		bolt_retransmit_go_back(retransmit);
	bolt_retransmit_resend(connection);
}

/* Asks the peer to send again what follows the last message taken in order. */
static void bolt_retransmit_ask(struct bolt_connection *connection, uint64_t now_ns)
{
	struct bolt_retransmit *retransmit = &connection->retransmit;

	retransmit->resend_asking = bolt_link_send_acknowledgement(connection, true, false);
	retransmit->resend_asked = connection->receive_sequence;
	retransmit->resend_asked_ns = now_ns;
}

/* A message taken in order: an acknowledgement is owed, now or soon. */
static void bolt_retransmit_owe(struct bolt_connection *connection, bool now)
{
	struct bolt_retransmit *retransmit = &connection->retransmit;

	if (now || connection->receive_sequence - retransmit->acknowledgement_sent >=
		   BOLT_RETRANSMIT_ACKNOWLEDGE_EVERY) {
		if (bolt_link_send_acknowledgement(connection, false, false))
			return;
	}
	if (!retransmit->acknowledgement_due_ns)
		retransmit->acknowledgement_due_ns =
			bolt_connection_now_ns() + BOLT_RETRANSMIT_ACKNOWLEDGE_DELAY_NS;
}

bool bolt_retransmit_in_order(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_retransmit *retransmit = &connection->retransmit;
	uint64_t now;

	if (header->sequence == connection->receive_sequence)
		return true;
	if (!bolt_retransmit_applies(connection)) {
		/* RC: a message its sender saw fail with its cable, sent again on another, had arrived. */
		if (bolt_retransmit_before(header->sequence, connection->receive_sequence))
			return false;
		bolt_loss_fail(connection, "sequence gap on a reliable queue pair");
		return false;
	}
	/* Sent again after all: the peer missed our acknowledgement. */
	if (bolt_retransmit_before(header->sequence, connection->receive_sequence)) {
		retransmit->duplicates++;
		bolt_retransmit_owe(connection, false);
		return false;
	}
	/*
	 * A gap: ask for what follows the last in order, once, and again while
	 * it stays (what was sent again may be lost too: progress asks after a
	 * while); a lost question is the sender's timeout's to cover.
	 */
	now = bolt_connection_now_ns();
	if (!retransmit->resend_asking || retransmit->resend_asked != connection->receive_sequence ||
	    now >= retransmit->resend_asked_ns + BOLT_RETRANSMIT_ASK_AGAIN_NS)
		bolt_retransmit_ask(connection, now);
	return false;
}

void bolt_retransmit_received(struct bolt_connection *connection)
{
	connection->retransmit.resend_asking = false;
	if (bolt_retransmit_applies(connection) && connection->state == BOLT_CONNECTION_ESTABLISHED)
		bolt_retransmit_owe(connection, false);
}

/* The peer acknowledged nothing for the liveness time while messages wait: it is gone. */
static bool bolt_retransmit_peer_silent(struct bolt_connection *connection, uint64_t now_ns)
{
	const struct bolt_retransmit *retransmit = &connection->retransmit;
	uint64_t liveness_ns = bolt_domain_liveness_ns(connection->manager->domain);

	if (retransmit->acknowledged == connection->send_sequence ||
	    now_ns < retransmit->progress_ns + liveness_ns)
		return false;
	FI_WARN(&bolt_prov, FI_LOG_EP_DATA,
		"peer acknowledged nothing for %d ms: %llu messages sent again, %llu timeouts\n",
		connection->manager->domain->fabric->params.liveness_timeout,
		(unsigned long long) retransmit->resends, (unsigned long long) retransmit->timeouts);
	bolt_connection_fail(connection, FI_EIO,
			     "the peer acknowledged nothing for the liveness time");
	return true;
}

void bolt_retransmit_progress(struct bolt_connection *connection, uint64_t now_ns)
{
	struct bolt_retransmit *retransmit = &connection->retransmit;
	bool waiting;

	if (!bolt_retransmit_applies(connection) || connection->state != BOLT_CONNECTION_ESTABLISHED)
		return;
	if (retransmit->acknowledgement_due_ns && now_ns >= retransmit->acknowledgement_due_ns)
		bolt_retransmit_owe(connection, true);
	/* A gap still open: what was sent again was lost too, or our question was. */
	if (retransmit->resend_asking &&
	    now_ns >= retransmit->resend_asked_ns + BOLT_RETRANSMIT_ASK_AGAIN_NS)
		bolt_retransmit_ask(connection, now_ns);
	if (!retransmit->entries)
		return;
	waiting = retransmit->acknowledged != connection->send_sequence;
	if (waiting && bolt_retransmit_peer_silent(connection, now_ns))
		return;
	if (waiting && !retransmit->going_back &&
	    now_ns >= retransmit->entries[retransmit->acknowledged % BOLT_RETRANSMIT_WINDOW].sent_ns +
		      retransmit->rto_ns) {
		retransmit->timeouts++;
		bolt_retransmit_go_back(retransmit);
		retransmit->rto_ns = retransmit->rto_ns * 2 > BOLT_RETRANSMIT_MAX_TIMEOUT_NS ?
				     BOLT_RETRANSMIT_MAX_TIMEOUT_NS : retransmit->rto_ns * 2;
	}
	bolt_retransmit_resend(connection);
	/*
	 * Few credits, and something to say: the peer may not know of our lost
	 * transmissions, nor have the credits we owe it (and it may be as dry).
	 */
	if (connection->link->send_credits <= BOLT_LINK_REPOST_BATCH &&
	    (waiting || connection->link->credits_to_return ||
	     connection->manager->events->busy(connection)) &&
	    now_ns >= retransmit->probe_ns + retransmit->rto_ns) {
		retransmit->probe_ns = now_ns;
		bolt_link_send_acknowledgement(connection, false, connection->link->send_credits <= 0);
	}
}

void bolt_retransmit_destroy(struct bolt_connection *connection)
{
	struct bolt_retransmit *retransmit = &connection->retransmit;

	if (!retransmit->entries)
		return;
	FI_INFO(&bolt_prov, FI_LOG_EP_DATA,
		"messages: %u sent, %llu sent again, %llu timeouts, %llu duplicates\n", connection->send_sequence,
		(unsigned long long) retransmit->resends, (unsigned long long) retransmit->timeouts,
		(unsigned long long) retransmit->duplicates);
	for (int i = 0; i < BOLT_RETRANSMIT_WINDOW; i++)
		free(retransmit->entries[i].bytes);
	free(retransmit->entries);
	retransmit->entries = NULL;
}
