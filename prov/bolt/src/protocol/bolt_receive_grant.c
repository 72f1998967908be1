/*
 * bolt_receive_grant.c: receives granted ahead. A rendezvous costs the
 * sender a request and the handling of its answer before each write: at
 * 64 KiB a quarter of what the write itself costs it. So a receiver grants
 * its posted untagged receives ahead to the peer whose messages will take
 * them, each for that peer's untagged message of one number. A peer's
 * messages take receives in order: the receive at the head of the posted
 * list is the one its next message takes, if no one else's does first.
 *
 * The sender writes a large message that has its grant straight into the
 * receive, as it would after an answer: one write with immediate data that
 * names the message (bolt_wire.h), or on RC from a connection that may not
 * write with immediate data, a write and its DONE, a second work request
 * for every message. It sends any other message as it would have (small,
 * too long for the receive, sent before the grant came): the receiver gives
 * that one the receive granted for its number all the same.
 *
 * A receive for any source, granted to one peer, waits for that peer. When
 * another's message finds no receive, the receiver asks the holders of such
 * grants to give them back: each stops using its grants and answers, and
 * what it wrote before is ahead of the answer on the queue pair, so the grants
 * still open when the answer comes are unused. Their receives go back to the
 * posted list, in posting order, where the waiting message finds them. An
 * fi_cancel of a granted receive asks back the same way, and the receive
 * ends cancelled once back, unless the peer wrote it first. A peer that has
 * not answered within FI_BOLT_LIVENESS_TIMEOUT is not waited for longer:
 * its connection fails, which takes the grants back and deregisters them.
 *
 * A receive whose message would go whole into one of the link's bounce
 * buffers (on UC) is not granted: it goes there all the same.
 *
 * Each grant's registration is of exactly its receive's bytes, with write
 * access only, and goes when the grant ends (bolt_registration_expose).
 *
 * Only the peer that sent the last two large untagged messages gets grants
 * of receives for any source: two senders in turn get none, and do not make
 * each other ask grants back all the time.
 *
 * One grant per message would cost the sender the handling of a message, and
 * the credit it takes, for every message it sends. So grants go out in
 * batches: once the peer has room for a batch more (or for half of what it
 * may hold, where that is less), and enough receives are posted
 * (bolt_receive_grant_may), it is granted every receive there is, up to what
 * it may hold, with BOLT_WIRE_RECEIVE_GRANT_BATCH to a message. What it
 * still holds keeps it writing while the batch comes. A grant counts as held
 * until its message lands, so a batch that waited for half of them to land
 * would leave a sender whose messages land late (on UC, after their lost
 * segments were written again) without grants: its next message would ask,
 * behind every granted one (bolt_transmit_behind_granted).
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"

/* ---- Receiver ---- */

static bool bolt_receive_grant_for_any(const struct bolt_receive *receive)
{
	return receive->source == FI_ADDR_UNSPEC;
}

/* Whether a receive is worth granting: what a rendezvous would write. */
static bool bolt_receive_grant_fits(const struct bolt_endpoint *endpoint,
				    const struct bolt_receive *receive)
{
	const struct bolt_domain *domain = endpoint->domain;

	return bolt_rail_port_data_writes(domain, &domain->primary) && receive->iov_count == 1 &&
	       receive->length >= (size_t) domain->fabric->params.rendezvous_threshold;
}

/* The connection whose messages the receive waits for: the one it names, or grant_peer. */
static struct bolt_connection *bolt_receive_grant_peer(struct bolt_endpoint *endpoint,
						       const struct bolt_receive *receive)
{
	struct bolt_connection *connection = NULL;
	struct bolt_address peer;

	if (bolt_receive_grant_for_any(receive))
		return endpoint->grant_peer;
	if (!bolt_av_lookup_address(endpoint->av, receive->source, &peer))
		HASH_FIND(hh, endpoint->connection_manager.connections, &peer, sizeof(peer), connection);
	return connection;
}

/* Receives granted in one message: to whom, and what the peer needs of each. */
struct bolt_receive_grant_batch {
	struct bolt_connection *connection;     /* the last granted, through the whole offer */
	uint64_t first_number;
	uint32_t count;
	struct bolt_wire_receive_grant grants[BOLT_WIRE_RECEIVE_GRANT_BATCH];
};

/*
 * Whether a receive is worth granting to the connection's peer: a message of
 * its length that goes whole into one of the link's bounce buffers does so,
 * not into a grant, which would only have cost a registration and a message
 * (16 KiB ping-pong on UC: 9.1 us granted, 7.7 not).
 */
static bool bolt_receive_grant_worth(const struct bolt_connection *connection,
				     const struct bolt_receive *receive)
{
	return !bolt_bounce_takes(connection->manager->domain, receive->length,
				  bolt_bounce_own_payload(connection->link));
}

/* Whether the receives at the head of the posted list include enough to grant the connection's peer. */
static bool bolt_receive_grant_waiting(struct bolt_endpoint *endpoint,
				       const struct bolt_connection *connection, uint32_t enough)
{
	struct bolt_receive *receive;
	uint32_t count = 0;

	DL_FOREACH(endpoint->posted, receive) {
		if (count >= enough || !bolt_receive_grant_fits(endpoint, receive) ||
		    bolt_receive_grant_peer(endpoint, receive) != connection ||
		    !bolt_receive_grant_worth(connection, receive))
			break;
		count++;
	}
	return count >= enough;
}

/*
 * Whether a receive may be granted a registration of its own on the
 * connection's port: grants only save a request and its answer, so they
 * leave a quarter of the budget to transfers that need one (Thunderbolt's
 * 96 would otherwise go to three peers' 32 grants each).
 */
static bool bolt_receive_grant_registration_left(const struct bolt_connection *connection)
{
	const struct bolt_rail_port *port = connection->link->port;

	return bolt_mr_cache_room(port->mr_cache) > port->budget.user_mr_budget / 4;
}

/*
 * Whether the connection's peer may be granted one more receive, in batch.
 * A new batch waits until the peer has room for a whole batch more (for
 * half of what it may hold, if that is less), and then until as many
 * receives wait to be granted as a batch takes, or as the peer still holds,
 * whichever is fewer: without that wait, an application whose reposts lag
 * behind the messages landing would have each receive granted in a message
 * of its own, the moment it is posted.
 */
static bool bolt_receive_grant_may(const struct bolt_connection *connection,
				   const struct bolt_receive_grant_batch *batch)
{
	uint32_t most, held, room, enough;

	if (!connection || connection->state != BOLT_CONNECTION_ESTABLISHED ||
	    bolt_peer_of(connection)->grants_revoking || !bolt_receive_grant_registration_left(connection))
		return false;
	most = (uint32_t) connection->manager->domain->fabric->params.receive_grants;
	held = bolt_peer_of(connection)->granted_count;
	if (held >= most)
		return false;
	/* This offer granted it one already: it goes on, batch after batch. */
	if (batch->connection == connection)
		return true;
	/* Room for a batch, or for half of what it may hold where that is less. */
	room = most / 2 < BOLT_WIRE_RECEIVE_GRANT_BATCH ? most / 2 : BOLT_WIRE_RECEIVE_GRANT_BATCH;
	if (most - held < room)
		return false;
	enough = BOLT_WIRE_RECEIVE_GRANT_BATCH;
	if (enough > most - held)
		enough = most - held;
	if (enough > held)
		enough = held ? held : 1;
	return bolt_receive_grant_waiting(bolt_connection_endpoint(connection), connection, enough);
}

/* The batch's message goes out; if it cannot, the connection fails, and takes its grants back. */
static void bolt_receive_grant_send(struct bolt_receive_grant_batch *batch)
{
	struct bolt_connection *connection = batch->connection;
	uint32_t count = batch->count;
	struct bolt_transmit *grant;

	if (!count)
		return;
	batch->count = 0;
	grant = bolt_transmit_internal(connection, BOLT_WIRE_RECEIVE_GRANT, batch->first_number, 0);
	if (!grant)
		return;
	if (bolt_transmit_attach(grant, batch->grants, count * sizeof(batch->grants[0]))) {
		bolt_transmit_free(grant);
		bolt_connection_fail(connection, FI_ENOMEM, "no memory for a protocol message");
		return;
	}
	grant->key_port = bolt_connection_port_index(connection);
	bolt_peer_of(connection)->receives_granted += count;
	bolt_peer_of(connection)->grant_messages++;
	bolt_transmit_start(grant);
}

/* Grants receive, the head of the posted list, to the connection's peer in batch; false if it cannot now. */
static bool bolt_receive_grant_one(struct bolt_connection *connection, struct bolt_receive *receive,
				   struct bolt_receive_grant_batch *batch)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	struct bolt_granted_receive *granted = bolt_allocate_zeroed(sizeof(*granted));
	struct bolt_wire_receive_grant *grant = &batch->grants[batch->count];

	if (!granted)
		return false;
	if (!bolt_registration_expose(connection, receive->iov[0].iov_base, receive->length,
				     &granted->registration)) {
		free(granted);
		return false;
	}
	granted->number = bolt_peer_of(connection)->messages_arrived + bolt_peer_of(connection)->granted_count + 1;
	granted->receive = receive;
	grant->address = (uintptr_t) receive->iov[0].iov_base;
	grant->length = receive->length;
	grant->rkey = bolt_registration_link_mr(connection, &granted->registration)->rkey;
	grant->reserved = 0;
	if (!batch->count++) {
		batch->connection = connection;
		batch->first_number = granted->number;
	}
	DL_DELETE(endpoint->posted, receive);
	DL_APPEND(bolt_peer_of(connection)->granted, granted);
	bolt_peer_of(connection)->granted_count++;
	if (bolt_receive_grant_for_any(receive))
		endpoint->unspecified_grants++;
	return true;
}

void bolt_receive_grant_offer(struct bolt_endpoint *endpoint)
{
	struct bolt_receive_grant_batch batch;
	struct bolt_receive *receive = endpoint->posted;

	/* Every receive of small messages comes here: it pays no zeroed batch (3 % of an 8 B send). */
	if (!receive || !bolt_receive_grant_fits(endpoint, receive))
		return;
	batch.connection = NULL;
	batch.first_number = 0;
	batch.count = 0;
	/* Past the head, a receive not granted would take the next message first. */
	while ((receive = endpoint->posted) && bolt_receive_grant_fits(endpoint, receive)) {
		struct bolt_connection *connection = bolt_receive_grant_peer(endpoint, receive);

		if (batch.count && (connection != batch.connection ||
				    batch.count == BOLT_WIRE_RECEIVE_GRANT_BATCH))
			bolt_receive_grant_send(&batch);
		if (!bolt_receive_grant_may(connection, &batch) ||
		    !bolt_receive_grant_worth(connection, receive) ||
		    !bolt_receive_grant_one(connection, receive, &batch))
			break;
	}
	bolt_receive_grant_send(&batch);
}

/* Takes the grant at the head of the connection's, which its peer's next message has; its receive. */
static struct bolt_receive *bolt_receive_grant_remove(struct bolt_connection *connection)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	struct bolt_granted_receive *granted = bolt_peer_of(connection)->granted;
	struct bolt_receive *receive = granted->receive;

	DL_DELETE(bolt_peer_of(connection)->granted, granted);
	bolt_peer_of(connection)->granted_count--;
	if (bolt_receive_grant_for_any(receive))
		endpoint->unspecified_grants--;
	bolt_registration_release(endpoint->domain, &granted->registration, receive->covered);
	free(granted);
	return receive;
}

/* One more untagged message from the connection's peer: the number it has, and who sends large ones. */
static void bolt_receive_grant_count(struct bolt_connection *connection, uint64_t length)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);

	bolt_peer_of(connection)->messages_arrived++;
	if (length < (uint64_t) endpoint->domain->fabric->params.rendezvous_threshold)
		return;
	if (endpoint->last_large_sender == connection)
		endpoint->grant_peer = connection;
	endpoint->last_large_sender = connection;
}

/*
 * Whether number is the peer's next untagged message: on UC, a message
 * written into a granted receive may be lost without a trace, and the next
 * one would take its receive. Fails the connection if not.
 */
static bool bolt_receive_grant_next(struct bolt_connection *connection, uint64_t number)
{
	if (number == bolt_peer_of(connection)->messages_arrived + 1)
		return true;
	bolt_loss_fail(connection, "an untagged message was lost");
	return false;
}

int bolt_receive_grant_take(struct bolt_connection *connection, uint64_t number, uint64_t length,
			    struct bolt_receive **receive)
{
	*receive = NULL;
	if (!bolt_receive_grant_next(connection, number))
		return -FI_EIO;
	bolt_receive_grant_count(connection, length);
	/* Grants are numbered on from the messages counted: the first is this one's, or none. */
	if (bolt_peer_of(connection)->granted && bolt_peer_of(connection)->granted->number == number)
		*receive = bolt_receive_grant_remove(connection);
	return 0;
}

void bolt_receive_grant_landed(struct bolt_connection *connection, uint64_t number, uint64_t length)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	const struct bolt_granted_receive *granted = bolt_peer_of(connection)->granted;
	struct bolt_receive *receive;

	if (!bolt_receive_grant_next(connection, number))
		return;
	if (!granted || granted->number != number || length > granted->receive->length) {
		bolt_connection_fail(connection, FI_EIO, "a message written into no granted receive");
		return;
	}
	bolt_receive_grant_count(connection, length);
	bolt_peer_of(connection)->granted_written++;
	receive = bolt_receive_grant_remove(connection);
	bolt_endpoint_complete_receive(endpoint, receive, connection, length, length, 0, 0, 0, 0);
	bolt_receive_grant_offer(endpoint);
}

bool bolt_receive_grant_immediate_names(const struct bolt_connection *connection, uint32_t immediate)
{
	if (!bolt_connection_unreliable(connection))
		return immediate == BOLT_IMMEDIATE_RC_GRANTED;
	return (immediate & (BOLT_IMMEDIATE_GRANTED | BOLT_IMMEDIATE_WRITE_BACK)) ==
	       BOLT_IMMEDIATE_GRANTED;
}

uint32_t bolt_receive_grant_immediate(const struct bolt_connection *connection, uint64_t number)
{
	if (!bolt_connection_unreliable(connection))
		return BOLT_IMMEDIATE_RC_GRANTED;
	return BOLT_IMMEDIATE_GRANTED | (uint32_t) (number & BOLT_IMMEDIATE_ID) |
	       (uint32_t) connection->slot << BOLT_IMMEDIATE_SLOT_SHIFT;
}

void bolt_receive_grant_written(struct bolt_connection *connection, const struct ibv_wc *wc)
{
	/* RC: the peer's next one. UC: the number's low bits say the next one, or one after a loss. */
	uint64_t next = bolt_peer_of(connection)->messages_arrived + 1;
	uint64_t number = !bolt_connection_unreliable(connection) ||
			  (wc->imm_data & BOLT_IMMEDIATE_ID) == (next & BOLT_IMMEDIATE_ID) ? next : 0;

	/* A write with immediate data, counted as the sender counted it. */
	connection->stripes_received++;
	bolt_peer_of(connection)->granted_by_immediate++;
	bolt_receive_grant_landed(connection, number, wc->byte_len);
}

/*
 * Records whether the connection's peer was asked to give its grants back
 * and has not answered yet; asked, it must answer within the liveness time.
 */
static void bolt_receive_grant_set_revoking(struct bolt_connection *connection, bool revoking)
{
	struct bolt_peer *peer = bolt_peer_of(connection);
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);

	if (peer->grants_revoking == revoking)
		return;
	peer->grants_revoking = revoking;
	if (!revoking) {
		endpoint->grant_revokes_waiting--;
		return;
	}
	endpoint->grant_revokes_waiting++;
	peer->grants_revoke_deadline_ns = bolt_connection_now_ns() + bolt_domain_liveness_ns(endpoint->domain);
}

/* Asks the connection's peer to give back its grants, unless it is asked already. */
static void bolt_receive_grant_revoke(struct bolt_connection *connection)
{
	struct bolt_transmit *revoke;

	if (bolt_peer_of(connection)->grants_revoking || !bolt_peer_of(connection)->granted ||
	    connection->state != BOLT_CONNECTION_ESTABLISHED)
		return;
	revoke = bolt_transmit_internal(connection, BOLT_WIRE_RECEIVE_REVOKE, 0, 0);
	if (!revoke)
		return;
	bolt_receive_grant_set_revoking(connection, true);
	bolt_transmit_start(revoke);
}

static bool bolt_receive_grant_holds_any(const struct bolt_connection *connection)
{
	const struct bolt_granted_receive *granted;

	DL_FOREACH(bolt_peer_of(connection)->granted, granted)
		if (bolt_receive_grant_for_any(granted->receive))
			return true;
	return false;
}

void bolt_receive_grant_revoke_others(struct bolt_connection *connection)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	struct bolt_connection *other, *next;

	if (!endpoint->unspecified_grants)
		return;
	endpoint->grant_peer = NULL;
	HASH_ITER(hh, endpoint->connection_manager.connections, other, next)
		if (other != connection && bolt_receive_grant_holds_any(other))
			bolt_receive_grant_revoke(other);
}

/* Every granted receive of the connection goes back: for any message, or ends cancelled. */
static void bolt_receive_grant_return_all(struct bolt_connection *connection)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);

	while (bolt_peer_of(connection)->granted) {
		struct bolt_receive *receive = bolt_receive_grant_remove(connection);

		if (receive->cancelled)
			bolt_endpoint_complete_receive(endpoint, receive, NULL, 0, 0, 0, receive->tag, 0,
						       FI_ECANCELED);
		else
			bolt_match_return(endpoint, receive);
	}
}

void bolt_receive_grant_revoke_answered(struct bolt_connection *connection)
{
	if (!bolt_peer_of(connection)->grants_revoking) {
		bolt_connection_fail(connection, FI_EIO, "receive grants given back unasked");
		return;
	}
	bolt_receive_grant_set_revoking(connection, false);
	bolt_receive_grant_return_all(connection);
	bolt_receive_grant_offer(bolt_connection_endpoint(connection));
}

void bolt_receive_grant_check_revokes(struct bolt_endpoint *endpoint)
{
	struct bolt_connection *connection, *next;
	uint64_t now_ns;

	if (!endpoint->grant_revokes_waiting)
		return;
	now_ns = bolt_connection_now_ns();
	HASH_ITER(hh, endpoint->connection_manager.connections, connection, next)
		if (bolt_peer_of(connection)->grants_revoking &&
		    now_ns >= bolt_peer_of(connection)->grants_revoke_deadline_ns)
			bolt_peer_fail_unanswered(connection, "its receive grants");
}

int bolt_receive_grant_cancel(struct bolt_endpoint *endpoint, void *context)
{
	struct bolt_connection *connection, *next;
	struct bolt_granted_receive *granted;

	HASH_ITER(hh, endpoint->connection_manager.connections, connection, next) {
		DL_FOREACH(bolt_peer_of(connection)->granted, granted) {
			if (granted->receive->context != context || granted->receive->cancelled)
				continue;
			granted->receive->cancelled = true;
			bolt_receive_grant_revoke(connection);
			return 0;
		}
	}
	return -FI_ENOENT;
}

struct ibv_mr *bolt_receive_grant_key_here(struct bolt_connection *connection, uint64_t number)
{
	struct bolt_granted_receive *granted;

	DL_FOREACH(bolt_peer_of(connection)->granted, granted)
		if (granted->number == number)
			return bolt_registration_follow_link(connection, &granted->registration);
	return NULL;
}

void bolt_receive_grant_lost(struct bolt_connection *connection)
{
	struct bolt_receive *receive;

	/* On UC a lost write leaves no trace but a count: it was the next message's, if any. */
	if (connection->state == BOLT_CONNECTION_FAILED || !bolt_peer_of(connection)->granted ||
	    bolt_peer_of(connection)->granted->number != bolt_peer_of(connection)->messages_arrived + 1)
		return;
	receive = bolt_receive_grant_remove(connection);
	bolt_endpoint_complete_receive(bolt_connection_endpoint(connection), receive, connection, 0, 0, 0, 0, 0,
				       FI_EIO);
}

void bolt_receive_grant_release(struct bolt_connection *connection, bool reuse)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);

	if (endpoint->grant_peer == connection)
		endpoint->grant_peer = NULL;
	if (endpoint->last_large_sender == connection)
		endpoint->last_large_sender = NULL;
	bolt_receive_grant_set_revoking(connection, false);
	bolt_peer_of(connection)->peer_grants_count = 0;
	if (reuse) {
		bolt_receive_grant_return_all(connection);
		return;
	}
	while (bolt_peer_of(connection)->granted)
		free(bolt_receive_grant_remove(connection));
}

/* ---- Sender ---- */

static struct bolt_receive_grant *bolt_receive_grant_at(struct bolt_connection *connection,
							uint32_t index)
{
	return &bolt_peer_of(connection)->peer_grants[(bolt_peer_of(connection)->peer_grants_first + index) %
					BOLT_RECEIVE_GRANTS_MAX];
}

static void bolt_receive_grant_drop_first(struct bolt_connection *connection)
{
	bolt_peer_of(connection)->peer_grants_first = (bolt_peer_of(connection)->peer_grants_first + 1) % BOLT_RECEIVE_GRANTS_MAX;
	bolt_peer_of(connection)->peer_grants_count--;
}

/* Why a grant message cannot be taken as it is; NULL if it can. */
static const char *bolt_receive_grant_check(struct bolt_connection *connection,
					    const struct bolt_wire_header *header)
{
	uint32_t count = header->payload_length / sizeof(struct bolt_wire_receive_grant);

	if (!count || count > BOLT_WIRE_RECEIVE_GRANT_BATCH ||
	    header->payload_length % sizeof(struct bolt_wire_receive_grant))
		return "a receive grant of a wrong length";
	if (header->request_id > UINT64_MAX - count)
		return "a receive grant out of range";
	if (bolt_peer_of(connection)->peer_grants_count &&
	    header->request_id <= bolt_receive_grant_at(connection,
							bolt_peer_of(connection)->peer_grants_count - 1)->number)
		return "a receive grant out of order";
	return NULL;
}

void bolt_receive_grant_arrived(struct bolt_connection *connection,
				const struct bolt_wire_header *header, const char *payload)
{
	const char *problem = bolt_receive_grant_check(connection, header);
	uint32_t count = header->payload_length / sizeof(struct bolt_wire_receive_grant);

	if (problem) {
		bolt_connection_fail(connection, FI_EIO, problem);
		return;
	}
	for (uint32_t index = 0; index < count; index++) {
		uint64_t number = header->request_id + index;
		struct bolt_wire_receive_grant wire;
		struct bolt_receive_grant *grant;

		memcpy(&wire, payload + index * sizeof(wire), sizeof(wire));
		/* Its message went out before it came: the peer gives that one the receive anyway. */
		if (number <= bolt_peer_of(connection)->messages_posted)
			continue;
		if (bolt_peer_of(connection)->peer_grants_count == BOLT_RECEIVE_GRANTS_MAX || wire.reserved) {
			bolt_connection_fail(connection, FI_EIO, "a receive grant beyond the limit");
			return;
		}
		grant = bolt_receive_grant_at(connection, bolt_peer_of(connection)->peer_grants_count++);
		grant->number = number;
		grant->address = wire.address;
		grant->length = wire.length;
		grant->rkey = wire.rkey;
		grant->port = bolt_rendezvous_key_port(connection, header);
	}
}

/* Whether transmit may be written into grant instead of asking. */
static bool bolt_receive_grant_suits(const struct bolt_connection *connection,
				     const struct bolt_transmit *transmit,
				     const struct bolt_receive_grant *grant)
{
	const struct bolt_params *params = &connection->manager->domain->fabric->params;

	/* Remote CQ data has no place in a write's immediate data; striped writes want answers. */
	return transmit->protocol == BOLT_PROTOCOL_RENDEZVOUS && transmit->phase == BOLT_RENDEZVOUS_ASK &&
	       transmit->length <= grant->length &&
	       !(transmit->flags & FI_REMOTE_CQ_DATA) &&
	       (transmit->length < (size_t) params->stripe_threshold ||
		!bolt_data_rail_striping(connection));
}

void bolt_receive_grant_use(struct bolt_connection *connection, struct bolt_transmit *transmit)
{
	uint64_t number = transmit->message_number;
	struct bolt_receive_grant grant;

	bolt_peer_of(connection)->messages_posted = number;
	/* Grants for messages that went out before them are of no use now. */
	while (bolt_peer_of(connection)->peer_grants_count && bolt_receive_grant_at(connection, 0)->number < number)
		bolt_receive_grant_drop_first(connection);
	if (!bolt_peer_of(connection)->peer_grants_count || bolt_receive_grant_at(connection, 0)->number != number)
		return;
	grant = *bolt_receive_grant_at(connection, 0);
	bolt_receive_grant_drop_first(connection);
	/* Its key is for a port the control rail left: the message goes as any other, into it. */
	if (grant.port != connection->link->port || !bolt_receive_grant_suits(connection, transmit, &grant) ||
	    !bolt_registration_acquire(connection, transmit->iov[0].iov_base, transmit->length,
				      &transmit->registration))
		return;
	transmit->target_length = transmit->length;
	transmit->target_address = grant.address;
	transmit->target_rkey = grant.rkey;
	transmit->target_port = grant.port;
	transmit->rail_mask = 0;
	transmit->protocol = BOLT_PROTOCOL_GRANTED_RECEIVE;
	transmit->phase = BOLT_RENDEZVOUS_WRITE;
}

void bolt_receive_grant_revoked(struct bolt_connection *connection)
{
	struct bolt_transmit *transmit, *answer;

	bolt_peer_of(connection)->peer_grants_count = 0;
	/* Granted but not written yet: they ask after all, behind the answer. */
	DL_FOREACH(bolt_peer_of(connection)->transmits, transmit)
		if (transmit->protocol == BOLT_PROTOCOL_GRANTED_RECEIVE)
			bolt_transmit_ask_instead(connection, transmit);
	answer = bolt_transmit_internal(connection, BOLT_WIRE_RECEIVE_REVOKED, 0, 0);
	if (answer)
		bolt_transmit_start(answer);
}
