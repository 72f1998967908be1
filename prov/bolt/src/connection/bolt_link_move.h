/*
 * bolt_link_move.h: a link (the control rail's queue pair) whose port or
 * cable fails moves to another pair of ports (bolt_link_move.c). Part of the
 * connection layer, included by its files only.
 */
#ifndef BOLT_LINK_MOVE_H
#define BOLT_LINK_MOVE_H

#include "connection/bolt_connection.h"
#include "connection/bolt_handshake.h"

/* Side-channel messages of a move, after bolt_handshake.h's types. */
enum bolt_link_move_type {
	BOLT_LINK_MOVE_ASK = 12,        /* body: struct bolt_handshake, the asker's new queue pair;
					 * peer_port: the answerer's port to move to */
	BOLT_LINK_MOVE_ANSWER,          /* body: struct bolt_handshake, the answerer's new queue
					 * pair; or a 4-byte word, an FI_E* code: it cannot move */
	BOLT_LINK_MOVE_CONNECTED,       /* body: a 4-byte word, the answerer's transmissions on
					 * the old link that the asker took; the asker connected,
					 * the answerer may send */
};

/*
 * Starts moving link away from its port (why: the port went down, a send
 * failed): a queue pair on another port that is up, and the peer asked to
 * connect one to it. False if it cannot move (no other port, no side channel).
 */
bool bolt_link_move_start(struct bolt_link *link, const char *why);
/* The links on port, which went down, move. */
void bolt_link_move_port_changed(struct bolt_domain *domain, const struct bolt_rail_port *port);
/*
 * Moves the peer refused for want of a port are asked again now and then; a
 * link still refused after the liveness time fails. From the port watch.
 */
void bolt_link_move_progress(struct bolt_domain *domain);
/* A side-channel message of a move on connection's stream; false if type is not one. */
bool bolt_link_move_handle(struct bolt_connection *connection, uint16_t type, const void *body,
			   uint32_t length);
/*
 * Whether link may take new sends: not moving away, not waiting for the peer
 * nor (unless passing: a message without a sequence number) older sends.
 */
bool bolt_link_move_may_send(const struct bolt_link *link, bool passing);
/*
 * Posts again on link, in order, the RC sends that came back flushed from
 * the link it replaced and had not arrived, while it has room and the keys.
 */
void bolt_link_move_resend(struct bolt_link *link);
/*
 * A send of a link moving or moved away completed: RC messages that came
 * back flushed are sent again on the new link, in order; returns the
 * connection whose operation may go on, as bolt_link_send_completed does.
 */
struct bolt_connection *bolt_link_move_send_completed(struct bolt_control_buffer *record,
						      const struct ibv_wc *wc);

/*
 * A link retires: a new link it was moving to goes too, and the link it
 * replaced, whose sends have no connection left to come back to.
 */
void bolt_link_move_unlink(struct bolt_link *link);

/* From bolt_connection.c and bolt_link.c, for the move. */
void bolt_connection_handshake_fill(const struct bolt_connection *connection,
				    struct bolt_handshake *handshake);
const char *bolt_connection_handshake_check(const struct bolt_connection_manager *manager,
					    const struct bolt_handshake *handshake, uint32_t length,
					    bool with_qp);
void bolt_link_retire(struct bolt_link *link);

#endif /* BOLT_LINK_MOVE_H */
