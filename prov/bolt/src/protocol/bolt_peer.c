/*
 * bolt_peer.c: a peer's protocol state, and the events through which the
 * connection layer tells the protocols what happened to a connection. A
 * peer is made with its connection and goes with it; when the connection
 * fails, every protocol ends what it had on it: transmits and their
 * replies, rendezvous records, receives granted ahead (and the peer's tagged
 * grants held here), direct-write grants and the inbound message.
 */
#include <stdlib.h>
#include <utlist.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"
#include "protocol/bolt_tag_grant.h"

fi_addr_t bolt_peer_fi_addr(struct bolt_connection *connection)
{
	struct bolt_peer *peer = bolt_peer_of(connection);
	struct bolt_av *av = peer->endpoint->av;

	/* The peer may be inserted after it first connected to us. */
	if (peer->fi_addr == FI_ADDR_NOTAVAIL && av)
		peer->fi_addr = bolt_av_reverse_lookup(av, &connection->peer);
	return peer->fi_addr;
}

static int bolt_peer_created(struct bolt_connection *connection)
{
	struct bolt_peer *peer = calloc(1, sizeof(*peer));

	if (!peer)
		return -FI_ENOMEM;
	peer->connection = connection;
	peer->endpoint = bolt_connection_endpoint(connection);
	peer->fi_addr = FI_ADDR_NOTAVAIL;
	connection->owner = peer;
	bolt_peer_fi_addr(connection);
	return 0;
}

/* A peer that lives on learns of the failure only over the side channel: its transfers end here. */
static void bolt_peer_failed(struct bolt_connection *connection)
{
	bolt_rendezvous_release(connection, connection->error);
	bolt_receive_grant_release(connection, true);
	bolt_tag_grant_release(connection);
	bolt_transmit_fail_all(connection);
	bolt_direct_write_forget_all(connection);
	bolt_match_connection_failed(connection);
}

static void bolt_peer_destroyed(struct bolt_connection *connection)
{
	bolt_rendezvous_release(connection, 0);
	bolt_receive_grant_release(connection, false);
	bolt_tag_grant_release(connection);
	bolt_transmit_discard_all(connection);
	bolt_direct_write_forget_all(connection);
	free(connection->owner);
	connection->owner = NULL;
}

bool bolt_peer_busy(const struct bolt_connection *connection)
{
	const struct bolt_peer *peer = bolt_peer_of(connection);

	return peer->transmits || peer->waiting || peer->posted || peer->inbound.active ||
	       peer->rendezvous;
}

/*
 * Whether the peer may still write into buffers of ours: receives granted
 * it, receives answered to its rendezvous requests, and reads it was asked
 * to write back, and regions whose revoke it has not answered. They go
 * back to the application when the connection fails.
 */
static bool bolt_peer_exposes_memory(const struct bolt_connection *connection)
{
	const struct bolt_peer *peer = bolt_peer_of(connection);
	const struct bolt_transmit *transmit;

	/* A region's grant revoked but not answered yet: the peer's writes may still come. */
	if (peer->granted_count || peer->rendezvous || bolt_direct_write_owes_answer(connection))
		return true;
	DL_FOREACH(peer->posted, transmit)
		if (transmit->op == BOLT_WIRE_READ_REQUEST &&
		    (transmit->wire_flags & BOLT_WIRE_FLAG_WRITE_BACK))
			return true;
	return false;
}

/* Whether the protocols still name the peer: work, memory it may write, messages of it kept. */
static bool bolt_peer_in_use(const struct bolt_connection *connection)
{
	return bolt_peer_busy(connection) || bolt_peer_exposes_memory(connection) ||
	       bolt_peer_of(connection)->unexpected_bytes;
}

void bolt_peer_fail_unanswered(struct bolt_connection *connection, const char *what)
{
	char peer[BOLT_ADDRESS_TEXT_SIZE];

	bolt_address_format(&connection->peer, peer, sizeof(peer));
	FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
		"peer %s did not answer the revoke of %s within FI_BOLT_LIVENESS_TIMEOUT (%d ms): "
		"its connection fails, and what it was given is deregistered\n", peer, what,
		connection->manager->domain->fabric->params.liveness_timeout);
	bolt_connection_fail(connection, FI_ETIMEDOUT, "a revoke unanswered within the liveness time");
}

/*
 * A message of the connection layer's own, queued with ours so that the peer
 * sees them in order. A write's landing goes ahead of all that is queued: a
 * message written into a granted receive takes its number at the target
 * then, and every message queued here has a later one (it waited for the
 * granted ones to land, which they have now).
 */
static void bolt_peer_send(struct bolt_connection *connection, const struct bolt_wire_header *header,
			   const void *payload, size_t payload_length)
{
	struct bolt_transmit *transmit = bolt_transmit_internal(connection, (enum bolt_wire_op) header->op,
								 header->request_id, header->cq_data);

	if (!transmit)
		return;
	transmit->remote_address = header->address;
	transmit->remote_key = header->key;
	transmit->tag = header->tag;
	if (payload_length && bolt_transmit_attach(transmit, payload, payload_length)) {
		bolt_transmit_free(transmit);
		bolt_connection_fail(connection, FI_ENOMEM, "no memory for a protocol message");
		return;
	}
	bolt_transmit_queue(transmit, header->op == BOLT_WIRE_WRITE_LANDED);
}

const struct bolt_connection_events bolt_peer_events = {
	.created = bolt_peer_created,
	.failed = bolt_peer_failed,
	.destroyed = bolt_peer_destroyed,
	.link_moved = bolt_transmit_other_ports,
	.can_send = bolt_transmit_progress,
	.busy = bolt_peer_busy,
	.exposes_memory = bolt_peer_exposes_memory,
	.in_use = bolt_peer_in_use,
	.over_limit = bolt_receive_over_limit,
	.message = bolt_receive_message,
	.write_landed = bolt_receive_landed,
	.write_keys = bolt_failover_write_keys,
	.lost = bolt_receive_grant_lost,
	.send = bolt_peer_send,
	.send_orphaned = bolt_transmit_orphaned,
};
