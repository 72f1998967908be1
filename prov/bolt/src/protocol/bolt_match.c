/*
 * bolt_match.c: matching messages to receives. Posted receives and messages
 * that arrived first (unexpected) are kept in order, separately for untagged
 * and tagged traffic. A message's segments arrive in order on its connection:
 * the first one is matched, the rest follow it into the same place. Tagged
 * receives may also peek at unexpected messages, claim one for a later
 * receive, or discard one (FI_PEEK, FI_CLAIM, FI_DISCARD).
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"
#include "protocol/bolt_tag_grant.h"

static bool bolt_match_source(const struct bolt_endpoint *endpoint,
			      const struct bolt_receive *receive,
			      struct bolt_connection *connection)
{
	if (receive->source == FI_ADDR_UNSPEC || !(endpoint->caps & FI_DIRECTED_RECV))
		return true;
	return bolt_peer_fi_addr(connection) == receive->source;
}

static bool bolt_match_tag(const struct bolt_receive *receive, bool tagged, uint64_t tag)
{
	return !tagged || ((receive->tag ^ tag) & ~receive->ignore) == 0;
}

static bool bolt_match_one(const struct bolt_endpoint *endpoint, const struct bolt_receive *receive,
			   struct bolt_connection *connection, bool tagged, uint64_t tag)
{
	return bolt_match_source(endpoint, receive, connection) &&
	       bolt_match_tag(receive, tagged, tag);
}

/* Completes receive with a message of length bytes, of which it holds copied. */
static void bolt_match_deliver(struct bolt_endpoint *endpoint, struct bolt_receive *receive,
			       struct bolt_connection *connection, size_t length,
			       uint8_t wire_flags, uint64_t tag, uint32_t cq_data)
{
	size_t copied = length < receive->length ? length : receive->length;
	/* A discarded message is dropped on purpose: no truncation to report. */
	bool truncated = length > receive->length && !(receive->flags & FI_DISCARD);

	bolt_endpoint_complete_receive(endpoint, receive, connection, copied, length, wire_flags,
				       tag, cq_data, truncated ? FI_ETRUNC : 0);
}

static struct bolt_unexpected **bolt_match_unexpected_list(struct bolt_endpoint *endpoint, bool tagged)
{
	return tagged ? &endpoint->unexpected_tagged : &endpoint->unexpected;
}

/*
 * What an unexpected message costs its peer and endpoint
 * (FI_BOLT_UNEXPECTED_LIMIT, FI_BOLT_UNEXPECTED_ENDPOINT_LIMIT): what is
 * allocated for it, never the length its header claims.
 */
static size_t bolt_match_unexpected_cost(const struct bolt_unexpected *unexpected)
{
	return sizeof(*unexpected) + unexpected->capacity;
}

static const struct bolt_params *bolt_match_params(const struct bolt_endpoint *endpoint)
{
	return &endpoint->domain->fabric->params;
}

bool bolt_match_peer_over_limit(const struct bolt_connection *connection)
{
	return bolt_peer_of(connection)->unexpected_bytes >
	       (size_t) bolt_match_params(bolt_connection_endpoint(connection))->unexpected_limit;
}

bool bolt_match_endpoint_over_limit(const struct bolt_endpoint *endpoint)
{
	return endpoint->unexpected_bytes > (size_t) bolt_match_params(endpoint)->unexpected_endpoint_limit;
}

/* Counts bytes kept for connection's unexpected messages (or freed), at its peer and endpoint. */
static void bolt_match_count(struct bolt_connection *connection, size_t bytes, bool freed)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);

	if (freed) {
		bolt_peer_of(connection)->unexpected_bytes -= bytes;
		endpoint->unexpected_bytes -= bytes;
	} else {
		bolt_peer_of(connection)->unexpected_bytes += bytes;
		endpoint->unexpected_bytes += bytes;
	}
}

/*
 * Room in unexpected's copy up to end, the end of the segment that arrived
 * (within the message: bolt_receive_check). It grows as the data comes,
 * doubling, but by no more than the limits leave, beyond what arrived: a
 * header's length is only a claim. The peer sends what its credits allow, and
 * those are held back once over a limit, so what is allocated stays within
 * the limits and a link's receives' worth.
 */
static int bolt_match_grow(struct bolt_connection *connection, struct bolt_unexpected *unexpected,
			   size_t end)
{
	const struct bolt_params *params = bolt_match_params(bolt_connection_endpoint(connection));
	size_t peer_bytes = bolt_peer_of(connection)->unexpected_bytes;
	size_t endpoint_bytes = bolt_connection_endpoint(connection)->unexpected_bytes;
	size_t peer_room = (size_t) params->unexpected_limit > peer_bytes ?
			   (size_t) params->unexpected_limit - peer_bytes : 0;
	size_t endpoint_room = (size_t) params->unexpected_endpoint_limit > endpoint_bytes ?
			       (size_t) params->unexpected_endpoint_limit - endpoint_bytes : 0;
	size_t room = peer_room < endpoint_room ? peer_room : endpoint_room;
	size_t capacity = unexpected->capacity ? unexpected->capacity : 1;
	char *data;

	if (unexpected->data && end <= unexpected->capacity)
		return 0;
	while (capacity < end && capacity < unexpected->length)
		capacity *= 2;
	if (capacity > unexpected->length)
		capacity = unexpected->length;
	if (capacity - unexpected->capacity > room)
		capacity = unexpected->capacity + room;
	if (capacity < end)
		capacity = end;
	if (!capacity)
		capacity = 1;           /* an empty message: a copy to hand over all the same */
	data = realloc(unexpected->data, capacity);
	if (!data)
		return -FI_ENOMEM;
	bolt_match_count(connection, capacity - unexpected->capacity, false);
	unexpected->data = data;
	unexpected->capacity = capacity;
	return 0;
}

static void bolt_match_discard_unexpected(struct bolt_endpoint *endpoint,
					  struct bolt_unexpected *unexpected)
{
	DL_DELETE(*bolt_match_unexpected_list(endpoint, unexpected->tagged), unexpected);
	free(unexpected->data);
	free(unexpected);
}

/* Falling back under a limit lets the peers held back by it send again. */
static void bolt_match_free_unexpected(struct bolt_endpoint *endpoint, struct bolt_unexpected *unexpected)
{
	struct bolt_connection *connection = unexpected->connection;
	bool over = bolt_match_peer_over_limit(connection);
	bool endpoint_over = bolt_match_endpoint_over_limit(endpoint);

	bolt_match_count(connection, bolt_match_unexpected_cost(unexpected), true);
	bolt_match_discard_unexpected(endpoint, unexpected);
	if ((over && !bolt_match_peer_over_limit(connection)) ||
	    (endpoint_over && !bolt_match_endpoint_over_limit(endpoint)))
		endpoint->domain->release_held = true;
}

/* An unexpected message is complete and has a receive: hand it over. */
static void bolt_match_hand_over(struct bolt_endpoint *endpoint, struct bolt_unexpected *unexpected,
				 struct bolt_receive *receive)
{
	bolt_iov_copy_in(receive->iov, receive->iov_count, 0, unexpected->data,
			 unexpected->length < receive->length ? unexpected->length : receive->length);
	bolt_match_deliver(endpoint, receive, unexpected->connection, unexpected->length,
			   unexpected->wire_flags, unexpected->tag, unexpected->cq_data);
	bolt_match_free_unexpected(endpoint, unexpected);
}

/* A rendezvous waits at the sender: the receive takes the place of the unexpected entry. */
static void bolt_match_claim_rendezvous(struct bolt_endpoint *endpoint,
					struct bolt_unexpected *unexpected, struct bolt_receive *receive)
{
	struct bolt_connection *connection = unexpected->connection;
	struct bolt_inbound *record = unexpected->rendezvous;

	record->unexpected = NULL;
	record->receive = receive;
	bolt_match_free_unexpected(endpoint, unexpected);
	bolt_rendezvous_answer(connection, record);
}

void bolt_match_drop_unexpected(struct bolt_endpoint *endpoint, struct bolt_unexpected *unexpected)
{
	bolt_match_free_unexpected(endpoint, unexpected);
}

/*
 * A receive matched a message still arriving (its connection's inbound one:
 * segments come in order): what came is copied into it and the rest goes
 * there directly, so that the copy stops growing and a peer held back over
 * its limit, which could then never finish the message, sends again.
 */
static void bolt_match_redirect(struct bolt_endpoint *endpoint, struct bolt_unexpected *unexpected,
				struct bolt_receive *receive)
{
	struct bolt_inbound *inbound = &bolt_peer_of(unexpected->connection)->inbound;

	bolt_iov_copy_in(receive->iov, receive->iov_count, 0, unexpected->data,
			 unexpected->received < receive->length ? unexpected->received : receive->length);
	inbound->receive = receive;
	inbound->unexpected = NULL;
	bolt_match_free_unexpected(endpoint, unexpected);
	endpoint->domain->release_held = true;
}

/* receive takes unexpected: now, when it is complete, or as its data arrives. */
static void bolt_match_take(struct bolt_endpoint *endpoint, struct bolt_unexpected *unexpected,
			    struct bolt_receive *receive)
{
	if (unexpected->rendezvous)
		bolt_match_claim_rendezvous(endpoint, unexpected, receive);
	else if (unexpected->received == unexpected->length && unexpected->data)
		bolt_match_hand_over(endpoint, unexpected, receive);
	else
		bolt_match_redirect(endpoint, unexpected, receive);
}

/* The first unexpected message receive matches that no FI_CLAIM peek has claimed. */
static struct bolt_unexpected *bolt_match_find_unexpected(struct bolt_endpoint *endpoint,
							  struct bolt_unexpected *list,
							  const struct bolt_receive *receive)
{
	struct bolt_unexpected *unexpected;

	DL_FOREACH(list, unexpected) {
		if (!unexpected->claim_context &&
		    bolt_match_one(endpoint, receive, unexpected->connection, receive->tagged,
				   unexpected->tag))
			return unexpected;
	}
	return NULL;
}

/* FI_DISCARD: the message is taken into no buffer and its data dropped. */
static void bolt_match_discard(struct bolt_endpoint *endpoint, struct bolt_unexpected *unexpected,
			       struct bolt_receive *receive)
{
	receive->iov_count = 0;
	receive->length = 0;
	bolt_match_take(endpoint, unexpected, receive);
}

/*
 * FI_PEEK: reports the first matching unexpected message (its length, tag,
 * data and source) and leaves it where it is, or fails with FI_ENOMSG. The
 * data is copied only when the buffer is given and all of it is here; else
 * the completion's buf is NULL, as fi_tagged(3) allows. With FI_CLAIM the
 * message is kept for the receive that names the same context; with
 * FI_DISCARD it is dropped, and the peek completes once it is.
 */
static void bolt_match_peek(struct bolt_endpoint *endpoint, struct bolt_receive *receive)
{
	struct bolt_unexpected *unexpected = bolt_match_find_unexpected(endpoint,
									endpoint->unexpected_tagged,
									receive);

	if (!unexpected) {
		bolt_endpoint_complete_receive(endpoint, receive, NULL, 0, 0, 0, receive->tag, 0,
					       FI_ENOMSG);
		return;
	}
	if (receive->flags & FI_DISCARD) {
		bolt_match_discard(endpoint, unexpected, receive);
		return;
	}
	if (receive->flags & FI_CLAIM)
		unexpected->claim_context = receive->context;
	if (unexpected->rendezvous || unexpected->received < unexpected->length)
		receive->iov_count = 0;
	bolt_iov_copy_in(receive->iov, receive->iov_count, 0, unexpected->data,
			 unexpected->length < receive->length ? unexpected->length : receive->length);
	bolt_endpoint_complete_receive(endpoint, receive, unexpected->connection, unexpected->length,
				       unexpected->length, unexpected->wire_flags, unexpected->tag,
				       unexpected->cq_data, 0);
}

/*
 * FI_CLAIM without FI_PEEK: receives (or with FI_DISCARD drops) the message
 * an earlier FI_PEEK | FI_CLAIM with the same context claimed. FI_ENOMSG if
 * there is none: never claimed, or lost with its connection while arriving.
 */
static void bolt_match_claimed(struct bolt_endpoint *endpoint, struct bolt_receive *receive)
{
	struct bolt_unexpected *unexpected;

	DL_FOREACH(endpoint->unexpected_tagged, unexpected) {
		if (unexpected->claim_context == receive->context)
			break;
	}
	if (!unexpected) {
		bolt_endpoint_complete_receive(endpoint, receive, NULL, 0, 0, 0, receive->tag, 0,
					       FI_ENOMSG);
		return;
	}
	unexpected->claim_context = NULL;
	if (receive->flags & FI_DISCARD)
		bolt_match_discard(endpoint, unexpected, receive);
	else
		bolt_match_take(endpoint, unexpected, receive);
}

/* The failed connection a directed receive names: nothing more comes from that peer. */
static struct bolt_connection *bolt_match_failed_source(struct bolt_endpoint *endpoint,
							const struct bolt_receive *receive)
{
	struct bolt_connection *connection;
	struct bolt_address peer;

	if (receive->source == FI_ADDR_UNSPEC || !(endpoint->caps & FI_DIRECTED_RECV) ||
	    bolt_av_lookup_address(endpoint->av, receive->source, &peer))
		return NULL;
	HASH_FIND(hh, endpoint->connection_manager.connections, &peer, sizeof(peer), connection);
	return connection && connection->state == BOLT_CONNECTION_FAILED ? connection : NULL;
}

bool bolt_match_message_waiting(struct bolt_endpoint *endpoint, const struct bolt_receive *receive)
{
	return bolt_match_find_unexpected(endpoint, *bolt_match_unexpected_list(endpoint, receive->tagged),
					  receive) != NULL;
}

void bolt_match_post(struct bolt_endpoint *endpoint, struct bolt_receive *receive)
{
	struct bolt_unexpected *unexpected;
	struct bolt_connection *failed;

	if (receive->tagged && (receive->flags & FI_PEEK)) {
		bolt_match_peek(endpoint, receive);
		return;
	}
	if (receive->tagged && (receive->flags & FI_CLAIM)) {
		bolt_match_claimed(endpoint, receive);
		return;
	}
	unexpected = bolt_match_find_unexpected(endpoint,
						*bolt_match_unexpected_list(endpoint, receive->tagged),
						receive);
	if (unexpected) {
		bolt_match_take(endpoint, unexpected, receive);
		return;
	}
	failed = bolt_match_failed_source(endpoint, receive);
	if (failed) {
		bolt_endpoint_complete_receive(endpoint, receive, failed, 0, 0, 0, receive->tag, 0,
					       failed->error);
		return;
	}
	if (receive->tagged) {
		DL_APPEND(endpoint->posted_tagged, receive);
		return;
	}
	receive->sequence = ++endpoint->receives_posted;
	DL_APPEND(endpoint->posted, receive);
	bolt_receive_grant_offer(endpoint);
}

void bolt_match_return(struct bolt_endpoint *endpoint, struct bolt_receive *receive)
{
	struct bolt_unexpected *unexpected = bolt_match_find_unexpected(endpoint, endpoint->unexpected,
									receive);
	struct bolt_receive *later;

	if (unexpected) {
		bolt_match_take(endpoint, unexpected, receive);
		return;
	}
	DL_FOREACH(endpoint->posted, later)
		if (later->sequence > receive->sequence)
			break;
	if (later)
		DL_PREPEND_ELEM(endpoint->posted, later, receive);
	else
		DL_APPEND(endpoint->posted, receive);
}

static struct bolt_receive *bolt_match_find_posted(struct bolt_endpoint *endpoint,
						   struct bolt_connection *connection, bool tagged,
						   uint64_t tag)
{
	struct bolt_receive **list = tagged ? &endpoint->posted_tagged : &endpoint->posted;
	struct bolt_receive *receive;

	DL_FOREACH(*list, receive) {
		if (bolt_match_one(endpoint, receive, connection, tagged, tag)) {
			DL_DELETE(*list, receive);
			return receive;
		}
	}
	return NULL;
}

int bolt_match_start(struct bolt_connection *connection, struct bolt_inbound *inbound,
		     const struct bolt_wire_header *header)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	bool tagged = header->flags & BOLT_WIRE_FLAG_TAGGED;
	struct bolt_unexpected *unexpected;

	inbound->active = true;
	inbound->tagged = tagged;
	inbound->wire_flags = header->flags;
	inbound->tag = header->tag;
	inbound->cq_data = header->cq_data;
	inbound->length = header->total_length;
	inbound->rendezvous = header->op == BOLT_WIRE_RENDEZVOUS;
	inbound->request_id = header->request_id;
	/* An untagged message takes the receive granted for it, if there is one. */
	if (!tagged) {
		inbound->tag = 0;       /* its number */
		if (bolt_receive_grant_take(connection, header->tag, header->total_length,
					    &inbound->receive))
			return -FI_EIO;
	}
	if (!inbound->receive)
		inbound->receive = bolt_match_find_posted(endpoint, connection, tagged, header->tag);
	/* A tagged one that did not wait for the receive its peer was granted takes that. */
	if (!inbound->receive && tagged)
		inbound->receive = bolt_tag_grant_take_back(connection, header->tag);
	/* Then the receives its peer's next messages take may be granted. */
	if (!tagged)
		bolt_receive_grant_offer(endpoint);
	if (inbound->receive)
		return 0;
	/* Receives granted to others for any source are asked back: this message may want one. */
	if (!tagged)
		bolt_receive_grant_revoke_others(connection);
	/* Its data is allocated as it arrives (bolt_match_grow); a rendezvous keeps it at the sender. */
	unexpected = bolt_allocate_zeroed(sizeof(*unexpected));
	if (!unexpected)
		return -FI_ENOMEM;
	unexpected->rendezvous = inbound->rendezvous ? inbound : NULL;
	unexpected->connection = connection;
	unexpected->tagged = tagged;
	unexpected->wire_flags = header->flags;
	unexpected->tag = inbound->tag;
	unexpected->cq_data = header->cq_data;
	unexpected->length = header->total_length;
	bolt_match_count(connection, bolt_match_unexpected_cost(unexpected), false);
	DL_APPEND(*bolt_match_unexpected_list(endpoint, tagged), unexpected);
	inbound->unexpected = unexpected;
	return 0;
}

/*
 * The first segment of a message: matched now, or, for a rendezvous the
 * sender could not write after all, by the request it already made.
 */
void bolt_match_arrival(struct bolt_connection *connection, const struct bolt_wire_header *header,
			const char *payload, size_t payload_length)
{
	struct bolt_inbound *inbound = &bolt_peer_of(connection)->inbound;
	struct bolt_inbound *record = bolt_rendezvous_take(connection, header->request_id);

	memset(inbound, 0, sizeof(*inbound));
	if (record) {
		if (!record->receive || record->write || record->length != header->total_length) {
			bolt_rendezvous_record_free(connection, record);
			bolt_connection_fail(connection, FI_EIO, "segments for another rendezvous");
			return;
		}
		*inbound = *record;
		memset(&inbound->registration, 0, sizeof(inbound->registration));
		inbound->rendezvous = false;
		inbound->prev = inbound->next = NULL;
		bolt_rendezvous_record_free(connection, record);
	} else if (bolt_match_start(connection, inbound, header)) {
		bolt_connection_fail(connection, FI_ENOMEM, "no memory for an unexpected message");
		return;
	}
	bolt_match_segment(connection, header, payload, payload_length);
}

void bolt_match_complete_inbound(struct bolt_connection *connection, struct bolt_inbound *inbound)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);

	inbound->active = false;
	bolt_registration_release(endpoint->domain, &inbound->registration, inbound->covered);
	/* An unexpected one stays in its list, complete, for the receive that matches it. */
	if (inbound->receive)
		bolt_match_deliver(endpoint, inbound->receive, connection, inbound->length,
				   inbound->wire_flags, inbound->tag, inbound->cq_data);
}

void bolt_match_segment(struct bolt_connection *connection, const struct bolt_wire_header *header,
			const char *payload, size_t length)
{
	struct bolt_inbound *inbound = &bolt_peer_of(connection)->inbound;

	if (header->total_length != inbound->length) {
		bolt_connection_fail(connection, FI_EIO, "segment of another message");
		return;
	}
	if (inbound->receive) {
		if (header->offset < inbound->receive->length)
			bolt_iov_copy_in(inbound->receive->iov, inbound->receive->iov_count,
					 header->offset, payload, length);
	} else {
		if (bolt_match_grow(connection, inbound->unexpected, header->offset + length)) {
			bolt_connection_fail(connection, FI_ENOMEM, "no memory for an unexpected message");
			return;
		}
		memcpy(inbound->unexpected->data + header->offset, payload, length);
		inbound->unexpected->received += length;
	}
	inbound->received += length;
	if (header->flags & BOLT_WIRE_FLAG_LAST) {
		if (inbound->received != inbound->length) {
			bolt_connection_fail(connection, FI_EIO, "last segment before the message ends");
			return;
		}
		bolt_match_complete_inbound(connection, inbound);
	}
}

static struct bolt_receive *bolt_match_remove_context(struct bolt_receive **list, void *context)
{
	struct bolt_receive *receive;

	DL_FOREACH(*list, receive) {
		if (receive->context == context) {
			DL_DELETE(*list, receive);
			return receive;
		}
	}
	return NULL;
}

int bolt_match_cancel(struct bolt_endpoint *endpoint, void *context)
{
	struct bolt_receive *receive = bolt_match_remove_context(&endpoint->posted, context);

	if (!receive)
		receive = bolt_match_remove_context(&endpoint->posted_tagged, context);
	/* A granted receive ends once its peer gives it back, unless the peer wrote it first. */
	if (!receive)
		return bolt_receive_grant_cancel(endpoint, context) ?
		       bolt_tag_grant_cancel(endpoint, context) : 0;
	bolt_endpoint_complete_receive(endpoint, receive, NULL, 0, 0, 0, receive->tag, 0,
				       FI_ECANCELED);
	return 0;
}

/* Directed receives waiting on a peer that is gone end with its error. */
static void bolt_match_fail_directed(struct bolt_connection *connection, struct bolt_receive **list)
{
	struct bolt_receive *receive, *next;

	DL_FOREACH_SAFE(*list, receive, next) {
		if (receive->source == FI_ADDR_UNSPEC || receive->source != bolt_peer_fi_addr(connection) ||
		    !(bolt_connection_endpoint(connection)->caps & FI_DIRECTED_RECV))
			continue;
		DL_DELETE(*list, receive);
		bolt_endpoint_complete_receive(bolt_connection_endpoint(connection), receive, connection, 0, 0, 0,
					       receive->tag, 0, connection->error);
	}
}

void bolt_match_connection_failed(struct bolt_connection *connection)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	struct bolt_inbound *inbound = &bolt_peer_of(connection)->inbound;
	struct bolt_unexpected *unexpected = inbound->unexpected;

	/* A message that failed as it began (a loss found, no memory) has neither. */
	if (inbound->active && inbound->receive) {
		bolt_endpoint_complete_receive(endpoint, inbound->receive, connection, 0, 0, 0,
					       inbound->tag, 0, connection->error);
	} else if (inbound->active && unexpected) {
		bolt_match_free_unexpected(endpoint, unexpected);
	}
	bolt_registration_release(endpoint->domain, &inbound->registration, inbound->covered);
	memset(inbound, 0, sizeof(*inbound));
	bolt_match_fail_directed(connection, &endpoint->posted);
	bolt_match_fail_directed(connection, &endpoint->posted_tagged);
}

static void bolt_match_free_receives(struct bolt_receive **list)
{
	struct bolt_receive *receive, *next;

	DL_FOREACH_SAFE(*list, receive, next) {
		DL_DELETE(*list, receive);
		free(receive);
	}
}

/*
 * Closing the endpoint: its connections, which the counts belong to, are gone
 * already. Receives held for them may sit on links other endpoints share:
 * those post them again at their next progress.
 */
static void bolt_match_free_unexpected_list(struct bolt_endpoint *endpoint, bool tagged)
{
	struct bolt_unexpected *unexpected, *next;

	DL_FOREACH_SAFE(*bolt_match_unexpected_list(endpoint, tagged), unexpected, next)
		bolt_match_discard_unexpected(endpoint, unexpected);
}

void bolt_match_free_all(struct bolt_endpoint *endpoint)
{
	bolt_match_free_receives(&endpoint->posted);
	bolt_match_free_receives(&endpoint->posted_tagged);
	bolt_match_free_unexpected_list(endpoint, false);
	bolt_match_free_unexpected_list(endpoint, true);
	endpoint->domain->release_held = true;
}
