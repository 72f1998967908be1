/*
 * bolt_tag_grant.h: tagged receives granted ahead (bolt_tag_grant.c), part
 * of the protocol layer (bolt_protocol.h): a receiver that knows the peer
 * and the tag of a large message it will take tells the peer where to
 * write it, and the peer writes without asking.
 */
#ifndef BOLT_TAG_GRANT_H
#define BOLT_TAG_GRANT_H

#include "protocol/bolt_protocol.h"

/* Grants a peer may have this end hold for messages not started yet; more fail its connection. */
#define BOLT_TAG_GRANTS_HELD_MAX 4096

/*
 * Receiver: grants receive (tagged, no ignore bits, one buffer, for the
 * peer of connection only) to that peer ahead, if its message will be a
 * rendezvous: at least
 * threshold bytes on a device that writes, too long for a bounce buffer
 * of the link. False if not: it is to be
 * posted as any receive. Once granted, the sender writes it, or (no
 * registration here) sends it in segments, which the receive, posted
 * then, takes. Either side must decide alike: the sender's message is to
 * have grant_awaited set (bolt_transmit.h) exactly when this grants.
 */
bool bolt_tag_grant_post(struct bolt_connection *connection, struct bolt_receive *receive,
			 size_t threshold);
/*
 * Receiver: asks back a granted receive of context (a cancel, as
 * bolt_match_cancel's). 0 if one was asked back: it ends cancelled once the peer
 * gives it back, or as any receive if the peer writes it first;
 * -FI_ENOENT if none is granted (or all are being asked back already).
 */
int bolt_tag_grant_cancel(struct bolt_endpoint *endpoint, void *context);
/*
 * Receiver: a tagged message from the peer of connection came without its
 * grant: the receive granted it for tag, given back to take the message
 * (its grant asked back); NULL if there is none.
 */
struct bolt_receive *bolt_tag_grant_take_back(struct bolt_connection *connection, uint64_t tag);
/* Receiver: fails the connections of peers that owe an answer to a TAG_REVOKE past its deadline. */
void bolt_tag_grant_check_revokes(struct bolt_endpoint *endpoint);
/* Receiver: the peer's answer to our TAG_REVOKE. */
void bolt_tag_grant_revoke_answered(struct bolt_connection *connection,
				    const struct bolt_wire_header *header);
/* Sender: transmit (grant_awaited) waits for its grant, or takes the one that came first. */
void bolt_tag_grant_await(struct bolt_connection *connection, struct bolt_transmit *transmit);
/* Sender: a TAG_GRANT came: for a message waiting for it, or held until that starts. */
void bolt_tag_grant_arrived(struct bolt_connection *connection, const struct bolt_wire_header *header,
			    const char *payload);
/* Sender: the receiver asks a grant back (TAG_REVOKE): given back if not taken yet. */
void bolt_tag_grant_revoked(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* Sender: the connection fails or closes: the grants held go with it. */
void bolt_tag_grant_release(struct bolt_connection *connection);

#endif /* BOLT_TAG_GRANT_H */
