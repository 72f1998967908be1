/*
 * bolt_tag_grant.c: tagged receives granted ahead. A rendezvous costs a
 * request and its answer before the write, and the answer waits for the
 * receiver to run: with more processes than cores, for it to be scheduled
 * again. A receiver that knows, when it posts, the one peer whose message
 * a receive takes, its exact tag and its length (its caller says so: a
 * receive with ignore bits is never granted), grants the receive to that
 * peer at once: the answer sent before the question,
 * with an id of its own (BOLT_REQUEST_ID_GRANTED) naming the transfer.
 * The sender does not ask: its message waits for the grant, or takes the
 * one that came first and was held for it, and then goes as after any
 * answer (bolt_rendezvous_take_answer): striped, moved, written again when
 * lost, completed, exactly as a rendezvous. Both ends decide alike from the
 * message's length (bolt_tag_grant_post), so no message waits for a grant
 * that does not come.
 *
 * Should the two ends decide otherwise after all (a link whose bounce
 * buffers one end no longer counts on), the peer's message, come another
 * way, takes the granted receive all the same, and the grant is asked back.
 *
 * A granted receive is the peer's until it writes it, or gives it back
 * when asked (TAG_REVOKE: a cancel of the receive): it answers that
 * the grant is back unused, and the receive ends cancelled, or that its
 * message took it, and the receive ends when that lands. A peer that has
 * not answered within FI_BOLT_LIVENESS_TIMEOUT is not waited for longer:
 * its connection fails, which ends the receive and deregisters it.
 */
#include <stdlib.h>
#include <utlist.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"
#include "protocol/bolt_tag_grant.h"

/* A grant that came before its message started: held for it. */
struct bolt_tag_grant {
	struct bolt_wire_header header;
	uint32_t rails;
	char payload[sizeof(struct bolt_wire_rail_keys)];
	struct bolt_tag_grant *prev, *next;
};

/* ---- Receiver ---- */

bool bolt_tag_grant_post(struct bolt_connection *connection, struct bolt_receive *receive,
			 size_t threshold)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct bolt_peer *peer = bolt_peer_of(connection);
	void *address = receive->iov[0].iov_base;
	struct bolt_inbound *record;

	/*
	 * A message a bounce buffer takes whole needs no grant: it is written
	 * unasked already. One that came first (its peer did not wait) is taken.
	 */
	if (receive->iov_count != 1 || receive->ignore || receive->length < threshold ||
	    !bolt_rail_port_data_writes(domain, &domain->primary) ||
	    connection->state == BOLT_CONNECTION_FAILED ||
	    bolt_bounce_takes(domain, receive->length, bolt_bounce_own_payload(connection->link)) ||
	    bolt_match_message_waiting(bolt_connection_endpoint(connection), receive))
		return false;
	record = calloc(1, sizeof(*record));
	if (!record) {
		bolt_connection_fail(connection, FI_ENOMEM, "no memory for a receive granted ahead");
		return false;
	}
	/* As a request matched to it would have made it (bolt_match_start). */
	record->active = true;
	record->granted = true;
	record->rendezvous = true;
	record->tagged = true;
	record->wire_flags = BOLT_WIRE_FLAG_TAGGED;
	record->tag = receive->tag;
	record->receive = receive;
	record->length = receive->length;
	record->covered = receive->covered;
	record->request_id = bolt_transmit_next_id(&peer->next_granted_id) | BOLT_REQUEST_ID_GRANTED;
	if (!bolt_registration_expose(connection, address, receive->length, &record->registration)) {
		/* No key to give: the peer sends it in segments, which find the receive posted. */
		bolt_match_post(bolt_connection_endpoint(connection), receive);
		bolt_rendezvous_say_where(connection, BOLT_WIRE_TAG_GRANT, record->request_id,
					  receive->tag, NULL, NULL, 0, BOLT_RENDEZVOUS_USE_SEGMENTS);
		free(record);
		return true;
	}
	DL_APPEND(peer->rendezvous, record);
	peer->tags_granted++;
	bolt_rendezvous_say_where(connection, BOLT_WIRE_TAG_GRANT, record->request_id, receive->tag,
				  record, address, receive->length, 0);
	return true;
}

static struct bolt_inbound *bolt_tag_grant_find_record(struct bolt_connection *connection,
						       uint64_t request_id)
{
	struct bolt_inbound *record;

	DL_FOREACH(bolt_peer_of(connection)->rendezvous, record)
		if (record->granted && record->request_id == request_id)
			return record;
	return NULL;
}

/* Asks the peer to give record's grant back, within the liveness time. */
static void bolt_tag_grant_revoke(struct bolt_connection *connection, struct bolt_inbound *record)
{
	struct bolt_transmit *revoke;

	record->revoking = true;
	record->revoke_deadline_ns = bolt_connection_now_ns() +
				     bolt_domain_liveness_ns(connection->manager->domain);
	revoke = bolt_transmit_internal(connection, BOLT_WIRE_TAG_REVOKE, record->request_id, 0);
	if (revoke)
		bolt_transmit_start(revoke);
}

struct bolt_receive *bolt_tag_grant_take_back(struct bolt_connection *connection, uint64_t tag)
{
	struct bolt_inbound *record;
	struct bolt_receive *receive;

	DL_FOREACH(bolt_peer_of(connection)->rendezvous, record)
		if (record->granted && record->receive && !record->kept && record->tag == tag)
			break;
	if (!record)
		return NULL;
	receive = record->receive;
	record->receive = NULL;
	/* Its message came another way: the grant will not be used, and opens nothing now. */
	bolt_registration_release(connection->manager->domain, &record->registration, record->covered);
	if (!record->revoking)
		bolt_tag_grant_revoke(connection, record);
	return receive;
}

int bolt_tag_grant_cancel(struct bolt_endpoint *endpoint, void *context)
{
	struct bolt_connection *connection, *next;
	struct bolt_inbound *record;

	HASH_ITER(hh, endpoint->connection_manager.connections, connection, next) {
		if (!bolt_peer_of(connection))
			continue;
		DL_FOREACH(bolt_peer_of(connection)->rendezvous, record) {
			if (!record->granted || record->revoking || record->kept || !record->receive ||
			    record->receive->context != context)
				continue;
			bolt_tag_grant_revoke(connection, record);
			return 0;
		}
	}
	return -FI_ENOENT;
}

void bolt_tag_grant_revoke_answered(struct bolt_connection *connection,
				    const struct bolt_wire_header *header)
{
	struct bolt_inbound *record = bolt_tag_grant_find_record(connection, header->request_id);

	/* Gone: its message landed before the answer. */
	if (!record)
		return;
	if (!record->revoking) {
		bolt_connection_fail(connection, FI_EIO, "a grant given back that was not asked back");
		return;
	}
	record->revoking = false;
	/* Taken: the receive ends as its message lands. */
	if (header->cq_data && record->receive) {
		record->kept = true;
		return;
	}
	DL_DELETE(bolt_peer_of(connection)->rendezvous, record);
	if (record->receive)
		bolt_endpoint_complete_receive(bolt_connection_endpoint(connection), record->receive,
					       connection, 0, 0, 0, record->tag, 0, FI_ECANCELED);
	bolt_rendezvous_record_free(connection, record);
}

void bolt_tag_grant_check_revokes(struct bolt_endpoint *endpoint)
{
	struct bolt_connection *connection, *next;
	struct bolt_inbound *record;
	uint64_t now_ns = bolt_connection_now_ns();

	HASH_ITER(hh, endpoint->connection_manager.connections, connection, next) {
		if (!bolt_peer_of(connection) || connection->state == BOLT_CONNECTION_FAILED)
			continue;
		DL_FOREACH(bolt_peer_of(connection)->rendezvous, record)
			if (record->granted && record->revoking && now_ns >= record->revoke_deadline_ns) {
				bolt_peer_fail_unanswered(connection, "a receive granted ahead");
				break;
			}
	}
}

/* ---- Sender ---- */

/* Transmit takes the grant header (with rails, their keys in payload) and goes on as answered. */
static void bolt_tag_grant_take(struct bolt_connection *connection, struct bolt_transmit *transmit,
				const struct bolt_wire_header *header, uint32_t rails,
				const char *payload)
{
	if (!header->cq_data && header->total_length != transmit->length) {
		bolt_connection_fail(connection, FI_EIO, "a receive granted ahead for another length");
		return;
	}
	bolt_transmit_resume(connection, transmit);
	/* From now on the transfer has the receiver's name: its stripes, DONE and key asks say it. */
	transmit->request_id = header->request_id;
	transmit->grant_awaited = false;
	bolt_peer_of(connection)->tag_grants_taken++;
	bolt_rendezvous_take_answer(connection, transmit, header, rails, payload);
}

void bolt_tag_grant_await(struct bolt_connection *connection, struct bolt_transmit *transmit)
{
	struct bolt_peer *peer = bolt_peer_of(connection);
	struct bolt_tag_grant *grant;

	DL_APPEND(peer->waiting, transmit);
	if (connection->state == BOLT_CONNECTION_FAILED) {
		bolt_transmit_fail_all(connection);
		return;
	}
	DL_FOREACH(peer->tag_grants, grant)
		if (grant->header.tag == transmit->tag)
			break;
	if (!grant)
		return;
	DL_DELETE(peer->tag_grants, grant);
	peer->tag_grant_count--;
	bolt_tag_grant_take(connection, transmit, &grant->header, grant->rails, grant->payload);
	free(grant);
}

/* The rails a grant names (its payload's), or why it cannot be trusted. */
static const char *bolt_tag_grant_check(const struct bolt_wire_header *header, const char *payload,
					uint32_t *rails)
{
	struct bolt_wire_rail_keys keys;

	if (!(header->request_id & BOLT_REQUEST_ID_GRANTED))
		return "a grant that names no granted transfer";
	*rails = 0;
	if (!header->payload_length)
		return NULL;
	if (header->payload_length != sizeof(keys))
		return "a grant whose payload is not its rails' keys";
	memcpy(&keys, payload, sizeof(keys));
	*rails = keys.rails;
	return NULL;
}

void bolt_tag_grant_arrived(struct bolt_connection *connection, const struct bolt_wire_header *header,
			    const char *payload)
{
	struct bolt_peer *peer = bolt_peer_of(connection);
	struct bolt_transmit *transmit;
	struct bolt_tag_grant *grant;
	const char *problem;
	uint32_t rails;

	problem = bolt_tag_grant_check(header, payload, &rails);
	if (problem) {
		bolt_connection_fail(connection, FI_EIO, problem);
		return;
	}
	DL_FOREACH(peer->waiting, transmit)
		if (transmit->grant_awaited && transmit->tag == header->tag)
			break;
	if (transmit) {
		bolt_tag_grant_take(connection, transmit, header, rails, payload);
		return;
	}
	/* Its message has not started: held for it, within bounds a peer cannot stretch. */
	grant = peer->tag_grant_count < BOLT_TAG_GRANTS_HELD_MAX ? calloc(1, sizeof(*grant)) : NULL;
	if (!grant) {
		bolt_connection_fail(connection, FI_ENOMEM, "too many receives granted ahead");
		return;
	}
	grant->header = *header;
	grant->rails = rails;
	if (header->payload_length)
		memcpy(grant->payload, payload, sizeof(grant->payload));
	DL_APPEND(peer->tag_grants, grant);
	peer->tag_grant_count++;
}

void bolt_tag_grant_revoked(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_peer *peer = bolt_peer_of(connection);
	struct bolt_tag_grant *grant;
	struct bolt_transmit *answer;

	DL_FOREACH(peer->tag_grants, grant)
		if (grant->header.request_id == header->request_id)
			break;
	if (grant) {
		DL_DELETE(peer->tag_grants, grant);
		peer->tag_grant_count--;
		free(grant);
	}
	/* Not held: a message of ours took it, and is written ahead of, or after, this answer. */
	answer = bolt_transmit_internal(connection, BOLT_WIRE_TAG_REVOKED, header->request_id,
					grant ? 0 : FI_EALREADY);
	if (answer)
		bolt_transmit_start(answer);
}

void bolt_tag_grant_release(struct bolt_connection *connection)
{
	struct bolt_peer *peer = bolt_peer_of(connection);
	struct bolt_tag_grant *grant, *next;

	DL_FOREACH_SAFE(peer->tag_grants, grant, next) {
		DL_DELETE(peer->tag_grants, grant);
		free(grant);
	}
	peer->tag_grant_count = 0;
}
