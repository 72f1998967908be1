/*
 * bolt_handshake.h: the messages of a connection's side channel: the
 * handshake that connects the queue pairs, and, once connected, the counts
 * that show a message lost on an unreliable queue pair (bolt_loss.c).
 */
#ifndef BOLT_HANDSHAKE_H
#define BOLT_HANDSHAKE_H

#include <stdint.h>

#include "bolt_address.h"

#define BOLT_HANDSHAKE_BYTE_ORDER 0x01020304u

enum bolt_handshake_type {
	BOLT_HANDSHAKE_HELLO = 1,
	BOLT_HANDSHAKE_REPLY,
	BOLT_HANDSHAKE_READY,
	BOLT_HANDSHAKE_REJECT,          /* body: the error, an FI_E* code */
	BOLT_HANDSHAKE_COUNT_ASK,       /* no body: answer with a count */
	BOLT_HANDSHAKE_COUNT,           /* body: struct bolt_handshake_count */
};

/* What one end has sent and received on the connection's queue pairs so far. */
struct bolt_handshake_count {
	uint32_t sent;                  /* control rail messages (the wire header's sequence) */
	uint32_t received;
	uint32_t stripes_sent;          /* data rail stripes */
	uint32_t stripes_received;
};

struct bolt_handshake {
	struct bolt_address sender;
	struct bolt_address receiver;   /* whom the sender means: the listener checks it */
	uint32_t byte_order;            /* the wire header is in the sender's order */
	uint32_t qp_type;
	uint32_t qpn;
	uint32_t psn;
	uint32_t receive_depth;
	uint8_t gid[16];
};

#endif /* BOLT_HANDSHAKE_H */
