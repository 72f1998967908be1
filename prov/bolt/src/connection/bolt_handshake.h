/*
 * bolt_handshake.h: the messages of a connection's side channel: the
 * handshake that connects the queue pairs, and, once connected, the counts
 * that once showed a message lost on an unreliable queue pair, now unused.
 */
#ifndef BOLT_HANDSHAKE_H
#define BOLT_HANDSHAKE_H

#include <stdint.h>

#include "bolt_address.h"

#define BOLT_HANDSHAKE_BYTE_ORDER 0x01020304u

enum bolt_handshake_type {
	BOLT_HANDSHAKE_HELLO = 1,       /* body: struct bolt_handshake, no queue pair yet */
	BOLT_HANDSHAKE_REPLY,           /* body: the link to join, or a new link's queue pair */
	BOLT_HANDSHAKE_READY,           /* no body after a join; a new link: the initiator's
					 * queue pair, connected to the answerer's */
	BOLT_HANDSHAKE_REJECT,          /* body: the error, an FI_E* code */
	BOLT_HANDSHAKE_COUNT_ASK,       /* unused since writes are written again (bolt_rewrite.c) */
	BOLT_HANDSHAKE_COUNT,           /* unused */
	BOLT_HANDSHAKE_CONNECTED,       /* no body: a new link's answerer connected: send, or
					 * where either end has several ports, probe first */
	BOLT_HANDSHAKE_PROBE_SENT,      /* body: the nonce of the probe sent on the new link */
	BOLT_HANDSHAKE_PROBED,          /* body: 0, the probe came; or FI_EHOSTUNREACH */
	BOLT_HANDSHAKE_CHECK,           /* first on a side channel of its own: body struct
					 * bolt_handshake_check; did you say this hello? */
	BOLT_HANDSHAKE_CHECKED,         /* body: 0, yes; or FI_ENOENT */
};

/*
 * A hello's claimed sender confirmed (bolt_confirm.c): the receiver of the
 * hello connects to the listener at the sender's address and asks whether it
 * said hello to the asker on a side channel whose handshake nonce (the
 * connecter's, in its PROOF) is this one. Only the process that holds that
 * listener can say yes, and only the one that made that side channel knows
 * its nonce.
 */
struct bolt_handshake_check {
	struct bolt_address asker;      /* the receiver of the hello */
	struct bolt_address sender;     /* the sender it claims, whom this asks */
	uint8_t nonce[32];              /* the connecter's nonce of the hello's side channel */
};

_Static_assert(sizeof(struct bolt_handshake_check) == 80, "the check has no padding");

/*
 * The initiator says hello with its domain's id. The answerer joins the
 * connection to a link it has to that domain, naming the link's queue pairs
 * and the slot, or makes a new link and sends its queue pair. A join the
 * initiator cannot take (its end of the link just went) says hello again,
 * asking for a new link.
 *
 * Where either end has several ports (cables), a new link's ports may not
 * meet: the initiator sends a probe over it, and the answerer, once told,
 * says whether it came. If not, the initiator says hello again, for the
 * next pair of ports.
 */
struct bolt_handshake {
	struct bolt_address sender;
	struct bolt_address receiver;   /* whom the sender means: the listener checks it */
	uint32_t byte_order;            /* the wire header is in the sender's order */
	uint32_t qp_type;
	uint64_t domain_id;             /* the sender's domain */
	uint32_t qpn;                   /* the sender's queue pair of the link; HELLO: 0 */
	uint32_t psn;
	uint32_t peer_qpn;              /* REPLY joining a link: the receiver's queue pair of it */
	uint32_t receive_depth;         /* of the link */
	uint8_t slot;                   /* REPLY: the connection's slot on the link, */
	uint8_t slot_nonce;             /* and the nonce its messages carry */
	uint8_t new_link;               /* HELLO: the sender cannot join a link, make one */
	uint8_t port;                   /* REPLY, READY: the sender's port of the new link */
	uint8_t port_count;             /* the sender's ports that may carry links */
	uint8_t peer_port;              /* HELLO: the receiver's port to make a new link on */
	uint8_t reserved[2];
	uint8_t gid[16];
	uint64_t bounce_address;        /* REPLY, READY of a new link: its bounce buffers for the */
	uint32_t bounce_rkey;           /* receiver, receive_depth of bounce_size bytes each; */
	uint32_t bounce_size;           /* 0: none (protocol/bolt_bounce.c) */
	uint32_t arrivals;              /* LINK_MOVE_ANSWER: the receiver's transmissions on the
					 * link that moves that the sender took (bolt_link_move.c) */
	uint32_t reserved_tail;
};

_Static_assert(sizeof(struct bolt_handshake) == 128, "the handshake has no padding");

#endif /* BOLT_HANDSHAKE_H */
