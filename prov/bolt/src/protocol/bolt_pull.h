/*
 * bolt_pull.h: messages pulled by their receiver on RC (bolt_pull.c), part
 * of the protocol layer (bolt_protocol.h): the sender's request names its
 * buffer, the receiver reads it by RDMA and answers that it did.
 */
#ifndef BOLT_PULL_H
#define BOLT_PULL_H

#include "protocol/bolt_protocol.h"

/*
 * A rendezvous answer's status: the receiver pulled the message by RDMA
 * read; beyond every FI_E* code and BOLT_RENDEZVOUS_USE_SEGMENTS.
 */
#define BOLT_RENDEZVOUS_PULLED 0x10000u

/* Sender: a rendezvous request of a pullable message names its buffer, exposed for reading. */
void bolt_pull_offer(struct bolt_connection *connection, struct bolt_transmit *transmit,
		     struct bolt_wire_header *header);
/* Sender: whether the answer says the receiver pulled it; if so the send is complete. */
bool bolt_pull_answered(struct bolt_connection *connection, struct bolt_transmit *transmit,
			const struct bolt_wire_header *header);
/* Sender: the buffer is no longer to be read (the send goes on from a copy). */
void bolt_pull_withdraw(struct bolt_transmit *transmit);
/* Receiver: the buffer a rendezvous request offers, if any. */
void bolt_pull_note(struct bolt_connection *connection, struct bolt_inbound *record,
		    const struct bolt_wire_header *header);
/*
 * Receiver: read record's message, length bytes, into address (its matched
 * receive, registered); false if it is to be answered for a write instead.
 */
bool bolt_pull_start(struct bolt_connection *connection, struct bolt_inbound *record, void *address,
		     size_t length);

#endif /* BOLT_PULL_H */
