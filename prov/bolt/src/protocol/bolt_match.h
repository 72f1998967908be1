/*
 * bolt_match.h: matching (bolt_match.c): messages from peers against the
 * receives the application posted, in order, and the unexpected ones kept
 * until a receive takes them, within FI_BOLT_UNEXPECTED_LIMIT per peer and
 * FI_BOLT_UNEXPECTED_ENDPOINT_LIMIT in all.
 */
#ifndef BOLT_MATCH_H
#define BOLT_MATCH_H

#include "protocol/bolt_protocol.h"

void bolt_match_post(struct bolt_endpoint *endpoint, struct bolt_receive *receive);
/* Whether a message that arrived before it waits for receive (bolt_match_post would take it). */
bool bolt_match_message_waiting(struct bolt_endpoint *endpoint, const struct bolt_receive *receive);
/* A receive granted ahead comes back: it takes a waiting message, or its place in the posted list. */
void bolt_match_return(struct bolt_endpoint *endpoint, struct bolt_receive *receive);
/*
 * The first segment of a message from connection, payload_length bytes at
 * payload (all of it, from a bounce buffer): matched or kept as unexpected.
 */
void bolt_match_arrival(struct bolt_connection *connection, const struct bolt_wire_header *header,
			const char *payload, size_t payload_length);
/* The message inbound describes has all its data: deliver it. */
void bolt_match_complete_inbound(struct bolt_connection *connection, struct bolt_inbound *inbound);
/* Fills inbound for a message header and matches it to a posted receive, or makes it unexpected. */
int bolt_match_start(struct bolt_connection *connection, struct bolt_inbound *inbound,
		     const struct bolt_wire_header *header);
/* A later segment of the message the peer's inbound record is receiving, length bytes at payload. */
void bolt_match_segment(struct bolt_connection *connection, const struct bolt_wire_header *header,
			const char *payload, size_t length);
/* FI_ECANCELED for the posted receive with this context; -FI_ENOENT if none. */
int bolt_match_cancel(struct bolt_endpoint *endpoint, void *context);
/* Forgets an unexpected message (a rendezvous whose sender is gone). */
void bolt_match_drop_unexpected(struct bolt_endpoint *endpoint, struct bolt_unexpected *unexpected);
/* Whether the endpoint keeps more of the peer's unexpected messages than FI_BOLT_UNEXPECTED_LIMIT. */
bool bolt_match_peer_over_limit(const struct bolt_connection *connection);
/* Whether it keeps more of all its peers' than FI_BOLT_UNEXPECTED_ENDPOINT_LIMIT. */
bool bolt_match_endpoint_over_limit(const struct bolt_endpoint *endpoint);
/* Fails the inbound message and directed receives of a failed connection. */
void bolt_match_connection_failed(struct bolt_connection *connection);
void bolt_match_free_all(struct bolt_endpoint *endpoint);

#endif /* BOLT_MATCH_H */
