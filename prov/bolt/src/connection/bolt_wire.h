/*
 * bolt_wire.h: the messages endpoints exchange over their queue pairs. Every
 * message is one SEND of at most one control buffer (4 KiB: one Thunderbolt
 * frame, so a SEND and its receive always span the same number of frames),
 * a header and a payload. Larger messages and RMA are cut into segments.
 * A write into a region the target granted is no message: one RDMA write
 * with immediate data (the remote CQ data, or 0) that consumes a receive,
 * or on a reliable queue pair to a target that counts nothing, a plain one.
 * Fields are in the sender's byte order: both ends run bolt on the same
 * architecture family (little-endian), checked in the side channel's hello.
 */
#ifndef BOLT_WIRE_H
#define BOLT_WIRE_H

#include <stdint.h>

#include "bolt.h"

enum bolt_wire_op {
	BOLT_WIRE_MESSAGE = 1,      /* a segment of fi_send / fi_tsend data */
	BOLT_WIRE_WRITE,            /* a segment of fi_write data, placed at key + address */
	BOLT_WIRE_WRITE_ACK,        /* the write's last segment was placed (or not: status) */
	BOLT_WIRE_READ_REQUEST,     /* fi_read: send back total_length bytes at key + address */
	BOLT_WIRE_READ_RESPONSE,    /* a segment of the data read, at offset in the request */
	BOLT_WIRE_CREDIT,           /* only returns credits and acknowledges (no sequence of its
				     * own); with BOLT_WIRE_FLAG_RESEND asks for what follows
				     * the acknowledged; on UC request_id: the write segments
				     * received in order, tag: those after it that arrived (bit
				     * k: request_id + 1 + k) */
	BOLT_WIRE_RENDEZVOUS,       /* a large message: where may its data be written? On RC it
				     * may name the sender's buffer instead, to be read at
				     * address with key, on the port in offset (bolt_pull.c) */
	BOLT_WIRE_RENDEZVOUS_READY, /* at address and key, total_length bytes (or status: segments,
				     * or BOLT_RENDEZVOUS_PULLED: the receiver read it);
				     * tag: the data rails with a receive posted for its stripes;
				     * payload: the key on each rail (struct bolt_wire_rail_keys) */
	BOLT_WIRE_RENDEZVOUS_DONE,  /* the data is written: it preceded this on the queue pair */
	BOLT_WIRE_RAIL_REQUEST,     /* data rail request_id: our queue pair is address, PSN key;
				     * a stripe rail: tag names the answerer's stripe port to try
				     * (1: its first), the payload our port's GID */
	BOLT_WIRE_RAIL_ANSWER,      /* the same for the answerer's, or status in cq_data: none;
				     * a stripe rail: tag is the nonce its probe must carry */
	BOLT_WIRE_REGION_GRANT,     /* key's region, total_length bytes from address tag, may be
				     * written directly: it is at address, device rkey in cq_data */
	BOLT_WIRE_REGION_REVOKE,    /* key's region is closing: no more direct writes to it;
				     * request_id names the revoke, for its answer */
	BOLT_WIRE_RAIL_PROBED,      /* stripe rail request_id: the probe with nonce tag arrived,
				     * or (status in cq_data) did not in time */
	BOLT_WIRE_RAIL_READY,       /* stripe rail request_id (nonce tag): use it from now on */
	BOLT_WIRE_RAIL_PROBE_SENT,  /* stripe rail request_id: the probe with nonce tag is sent */
	BOLT_WIRE_REGION_REVOKED,   /* the revoke request_id arrived: every direct write to its
				     * region is on the wire ahead of this */
	BOLT_WIRE_RECEIVE_GRANT,    /* the receives for our untagged messages from number
				     * request_id on, one after another: the payload, each a
				     * struct bolt_wire_receive_grant */
	BOLT_WIRE_RECEIVE_REVOKE,   /* use no more receive grants, and answer */
	BOLT_WIRE_RECEIVE_REVOKED,  /* every message written into a granted receive is on the
				     * wire ahead of this */
	BOLT_WIRE_STRIPE_MOVED,     /* RC: the stripe whose immediate data is cq_data, meant
				     * for data rail tag, which failed, was written ahead of
				     * this on the control rail (failover) */
	BOLT_WIRE_RAIL_STATE,       /* data rail request_id failed at the sender (status in
				     * cq_data: a cut cable, a port down), or with 0 is usable
				     * again: offer no stripes on it meanwhile */
	BOLT_WIRE_WRITE_LANDED,     /* UC: every segment of a write with immediate data cq_data,
				     * total_length bytes, arrived; the target takes it now, once
				     * (connection/bolt_rewrite.c) */
	BOLT_WIRE_STRIPE_KEY_ASK,   /* the control rail moved to a port where the buffer of
				     * transfer request_id has no key for a moved stripe (with
				     * BOLT_WIRE_FLAG_WRITE_BACK: the target's read of that id,
				     * written back; with GRANTED, the receive granted for
				     * message tag, and with WRITE too the region of key):
				     * register it there and say the key; and (RC) which
				     * stripes of the data rails in mask tag, come back
				     * flushed at the sender, landed all the same */
	BOLT_WIRE_STRIPE_KEY,       /* its answer: the key, and in tag those that landed; or
				     * a status in cq_data, FI_EALREADY if the transfer
				     * completed (every byte landed) */
	BOLT_WIRE_TAG_GRANT,        /* the receive for our tagged message tag, granted ahead
				     * (protocol/bolt_tag_grant.c): as RENDEZVOUS_READY, named
				     * request_id (BOLT_REQUEST_ID_GRANTED), its rails only in
				     * the payload */
	BOLT_WIRE_TAG_REVOKE,       /* do not use the grant request_id: answer */
	BOLT_WIRE_TAG_REVOKED,      /* the grant request_id is given back unused, or (status
				     * in cq_data) its message is being written */
	BOLT_WIRE_OP_LAST = BOLT_WIRE_TAG_REVOKED,
};

/* Ops whose payload is a segment of data, at offset within total_length. */
static inline int bolt_wire_op_carries_data(enum bolt_wire_op op)
{
	return op == BOLT_WIRE_MESSAGE || op == BOLT_WIRE_WRITE || op == BOLT_WIRE_READ_RESPONSE;
}

enum bolt_wire_flag {
	BOLT_WIRE_FLAG_TAGGED = 1 << 0,
	BOLT_WIRE_FLAG_RESEND = 1 << 0,     /* CREDIT only: a gap, send again from acknowledged */
	BOLT_WIRE_FLAG_REMOTE_CQ_DATA = 1 << 1,
	BOLT_WIRE_FLAG_LAST = 1 << 2,       /* the last segment of its message or request */
	BOLT_WIRE_FLAG_WRITE = 1 << 3,      /* a rendezvous for fi_write, at key + address */
	BOLT_WIRE_FLAG_NO_ACK = 1 << 4,     /* a rendezvous write whose initiator needs no ack */
	BOLT_WIRE_FLAG_GRANTED = 1 << 5,    /* a write whose initiator holds a grant for its key;
					     * a DONE: the message is in a receive granted ahead */
	BOLT_WIRE_FLAG_QUIET = 1 << 6,      /* a grant whose target needs no word of each write */
	BOLT_WIRE_FLAG_WRITE_BACK = 1 << 7, /* a read whose data may be written back by RDMA:
					     * to address tag, rkey cq_data; or in stripes on
					     * the rails its payload names */
};

/* What a STRIPE_KEY_ASK's flags say of the buffer it names; its answer says them again. */
#define BOLT_WIRE_KEY_ASK_KIND (BOLT_WIRE_FLAG_WRITE_BACK | BOLT_WIRE_FLAG_GRANTED | BOLT_WIRE_FLAG_WRITE)

/*
 * Connections of a link share its queue pair (connection/bolt_link.c): a
 * message names its connection's slot in the header. An RDMA write with
 * immediate data names it in the immediate: on UC, the slot and the transfer
 * (BOLT_IMMEDIATE_ID, 0 for a direct write), or with BOLT_IMMEDIATE_GRANTED
 * the untagged message written into a receive granted ahead (its number's
 * low bits); on RC, where the immediate is the remote CQ data whole, only the
 * link's first connection (slot 0) writes with immediate data on the link:
 * a direct write's remote CQ data, or BOLT_IMMEDIATE_RC_GRANTED for its next
 * untagged message written into a granted receive (RC keeps the order, so
 * the target knows the number). Remote CQ data of that value, as of 0 (none),
 * asks instead of writing directly.
 */
#define BOLT_LINK_SLOTS 32
#define BOLT_IMMEDIATE_WRITE_BACK 0x80000000u
#define BOLT_IMMEDIATE_SLOT_SHIFT 26
#define BOLT_IMMEDIATE_SLOT_MASK 0x7c000000u
#define BOLT_IMMEDIATE_GRANTED 0x02000000u
#define BOLT_IMMEDIATE_ID 0x01ffffffu
/*
 * The transfers of receives granted ahead for tagged messages are named by
 * the receiver, with this bit of the id set; the sender's own never have it.
 */
#define BOLT_REQUEST_ID_GRANTED 0x01000000u
/* WRITE_BACK with no ID (UC): a message written whole into the bounce buffer the slot bits name. */
#define BOLT_IMMEDIATE_BOUNCE BOLT_IMMEDIATE_WRITE_BACK
#define BOLT_IMMEDIATE_RC_GRANTED 0xb017e5e7u
/*
 * WRITE_BACK and GRANTED together (UC): a segment of a write that is written
 * again if lost, its number in the low bits (connection/bolt_rewrite.c).
 */
#define BOLT_IMMEDIATE_SEGMENT (BOLT_IMMEDIATE_WRITE_BACK | BOLT_IMMEDIATE_GRANTED)

struct bolt_wire_header {
	uint8_t op;                 /* enum bolt_wire_op */
	uint8_t flags;              /* enum bolt_wire_flag */
	uint16_t credits;           /* receives the sender gave back on the link for the peer
				     * since it started, modulo 2^16: reposted, and those the
				     * peer's lost transmissions never took */
	uint16_t payload_length;    /* bytes after the header, at most a control buffer's */
	uint8_t slot;               /* the connection's slot on the link (bolt_link.c) */
	uint8_t slot_nonce;         /* and its nonce there: a message meant for an earlier
				     * occupant of the slot is dropped */
	uint32_t sequence;          /* per connection and direction, from 0: what is resent */
	uint32_t cq_data;           /* FI_REMOTE_CQ_DATA; WRITE_ACK, READ_RESPONSE: status */
	uint64_t tag;               /* an untagged message's: its number (receive grants) */
	uint64_t request_id;        /* the sender's operation, echoed in acks and responses */
	uint64_t total_length;      /* of the whole message or request */
	uint64_t offset;            /* of this segment within the message or request; in one
				     * that gives a key (RENDEZVOUS_READY, STRIPE_KEY, the
				     * grants, a READ_REQUEST with WRITE_BACK): the sender's
				     * port it is on, by the link's numbering */
	uint64_t address;           /* WRITE, READ_REQUEST: the target address */
	uint64_t key;               /* WRITE, READ_REQUEST: the target key */
	uint32_t link_sequence;     /* per link and direction: the transmissions that take a
				     * receive (messages, writes with immediate data) before
				     * this one; a gap is what UC lost, and gave back */
	uint32_t acknowledged;      /* the connection's messages from the peer received in
				     * order: the next sequence this end expects */
};

_Static_assert(sizeof(struct bolt_wire_header) == 72, "the wire header has no padding");

/* Bytes of payload one control buffer carries after the wire header. */
#define BOLT_SEGMENT_PAYLOAD (4096 - sizeof(struct bolt_wire_header))

/*
 * The credits a header brings: its count of receives given back less the
 * count already seen (credits_seen), modulo 2^16. An older count (a message
 * sent before one already seen, sent again) brings none.
 */
static inline uint16_t bolt_wire_credits_brought(const struct bolt_wire_header *header,
						 uint16_t credits_seen)
{
	uint16_t brought = (uint16_t) (header->credits - credits_seen);

	return brought < 0x8000 ? brought : 0;
}

/*
 * Why a received message of length bytes whose first bytes are header cannot
 * be trusted, or NULL: short, an unknown operation, a payload length that is
 * not what arrived, or more credits than the peer has receives (send_credits
 * already held, which may be below 0 after lost transmissions, credits_seen,
 * peer_receive_depth). Inline and pure, so that the fuzz target
 * (test/fuzz/fuzz_wire_header.c) checks the very code.
 */
static inline const char *bolt_wire_check_credits(const struct bolt_wire_header *header,
						  int32_t send_credits, uint16_t credits_seen,
						  uint32_t peer_receive_depth)
{
	if ((int64_t) send_credits + bolt_wire_credits_brought(header, credits_seen) >
	    (int64_t) peer_receive_depth)
		return "more credits than the peer has receives";
	return NULL;
}

static inline const char *bolt_wire_check(const struct bolt_wire_header *header, uint32_t length,
					  int32_t send_credits, uint16_t credits_seen,
					  uint32_t peer_receive_depth)
{
	if (length < sizeof(*header))
		return "message shorter than its header";
	if (header->op < BOLT_WIRE_MESSAGE || header->op > BOLT_WIRE_OP_LAST)
		return "unknown operation";
	if (header->payload_length != length - sizeof(*header) ||
	    header->payload_length > BOLT_SEGMENT_PAYLOAD)
		return "payload length does not match the message";
	return bolt_wire_check_credits(header, send_credits, credits_seen, peer_receive_depth);
}

/*
 * One receive granted ahead: its bytes, and their device rkey. A grant
 * message carries up to BOLT_WIRE_RECEIVE_GRANT_BATCH of them: with its
 * header 264 bytes, still a small message on any device.
 */
struct bolt_wire_receive_grant {
	uint64_t address;
	uint64_t length;
	uint32_t rkey;
	uint32_t reserved;          /* 0 */
};

#define BOLT_WIRE_RECEIVE_GRANT_BATCH 8

_Static_assert(sizeof(struct bolt_wire_header) +
	       BOLT_WIRE_RECEIVE_GRANT_BATCH * sizeof(struct bolt_wire_receive_grant) == 264,
	       "a full grant message is 264 bytes");

/*
 * The payload of a rendezvous answer that names data rails, and of a read
 * whose data may be written back in stripes: those rails, and the device key
 * of the buffer on each one's port (ports register apart: a key of one means
 * nothing on another).
 */
struct bolt_wire_rail_keys {
	uint32_t rails;                 /* a mask; an answer's tag too */
	uint32_t rkey[BOLT_MAX_CONNECTION_RAILS];
};

#endif /* BOLT_WIRE_H */
