/*
 * bolt_retransmit.h: messages sent on UC and not yet acknowledged, kept to
 * be sent again (bolt_retransmit.c): go-back-N over a window of the
 * connection's sequence numbers, each a copy of what was sent. Part of the
 * connection layer: a connection embeds its struct bolt_retransmit.
 */
#ifndef BOLT_RETRANSMIT_H
#define BOLT_RETRANSMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "connection/bolt_round_trip.h"
#include "connection/bolt_wire.h"

struct bolt_connection;
struct ibv_send_wr;

/* Messages in flight, at most; the window of sequence numbers kept. */
#define BOLT_RETRANSMIT_WINDOW 32

struct bolt_retransmit_entry {
	char *bytes;                    /* the header as sent, then the payload */
	uint32_t length, capacity;
	bool bounce;                    /* written whole into a bounce buffer, not sent */
	bool resent;                    /* no round-trip sample from it (Karn) */
	uint64_t sent_ns;               /* its last (re)transmission */
};

struct bolt_retransmit {
	struct bolt_retransmit_entry *entries;  /* by sequence modulo the window; NULL: none yet */
	uint32_t acknowledged;          /* the peer has every message before this */
	bool going_back;                /* sending again from resend_next to send_sequence */
	uint32_t resend_next;
	uint32_t resent_from;           /* the acknowledged a resend last started from */
	bool resending;                 /* posting a copy: it is kept already */
	uint64_t progress_ns;           /* acknowledged last moved, or the first unacknowledged left */
	struct bolt_round_trip round_trip;      /* measured, with the timeout from it, */
	uint64_t rto_ns;                /* and that as backed off while nothing comes back */
	uint32_t acknowledgement_sent;  /* receiver: the receive_sequence our last header said */
	uint64_t acknowledgement_due_ns;        /* owed from then on; 0: none owed */
	uint32_t resend_asked;          /* receiver: the gap we asked about, */
	uint64_t resend_asked_ns;       /* when, */
	bool resend_asking;             /* and whether the question went */
	uint64_t probe_ns;              /* no credit left: our last probe */
	uint64_t resends, timeouts, duplicates; /* what it took, for the log */
};

/* Whether the window has room for one more message. */
bool bolt_retransmit_has_room(const struct bolt_connection *connection);
/* Keeps a copy of the message wr sends (header its first bytes); false if out of memory. */
bool bolt_retransmit_keep(struct bolt_connection *connection, const struct bolt_wire_header *header,
			  const struct ibv_send_wr *wr);
/* A header from the peer: what it acknowledges, and a resend it asks for. */
void bolt_retransmit_acknowledged(struct bolt_connection *connection,
				  const struct bolt_wire_header *header);
/* Whether a message (sequence) is the next in order: else it is dropped, and asked for again. */
bool bolt_retransmit_in_order(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* The message in order was taken (receive_sequence counts it): an acknowledgement is owed. */
void bolt_retransmit_received(struct bolt_connection *connection);
/* A header of ours goes out: it acknowledges what arrived so far. */
void bolt_retransmit_acknowledging(struct bolt_connection *connection, struct bolt_wire_header *header);
/* Timeouts, resends, acknowledgements owed, probes when no credit is left. */
void bolt_retransmit_progress(struct bolt_connection *connection, uint64_t now_ns);
void bolt_retransmit_destroy(struct bolt_connection *connection);

#endif /* BOLT_RETRANSMIT_H */
