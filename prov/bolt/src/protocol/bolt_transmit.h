/*
 * bolt_transmit.h: the operations this end started, and the replies it owes
 * a peer (transmits), part of the protocol layer (bolt_protocol.h): how each
 * goes (its protocol, a rendezvous's phase, the stripes of a transfer) and
 * the functions of bolt_transmit.c that queue, send and end them.
 */
#ifndef BOLT_TRANSMIT_H
#define BOLT_TRANSMIT_H

#include <sys/uio.h>

#include "bolt_attr.h"
#include "connection/bolt_connection.h"

/*
 * How a transmit's data goes to the peer: chosen once, when it starts
 * (bolt_transmit_choose_protocol), and changed only by a fallback its
 * protocol decides (buffers that cannot be registered, a region revoked, an
 * answer that asks for segments). Each has its entry in the table of
 * protocols in bolt_transmit.c.
 */
enum bolt_protocol_kind {
	BOLT_PROTOCOL_EAGER,            /* segments through control buffers */
	BOLT_PROTOCOL_BOUNCE,           /* a message written whole into the peer's bounce buffer */
	BOLT_PROTOCOL_DIRECT_WRITE,     /* a write into a region the target granted: no request */
	BOLT_PROTOCOL_GRANTED_RECEIVE,  /* a message written into the receive the peer granted ahead */
	BOLT_PROTOCOL_RENDEZVOUS,       /* asked for, answered, then written by RDMA */
	BOLT_PROTOCOL_KINDS,
};

/*
 * Where a rendezvous is (from FI_BOLT_RENDEZVOUS_THRESHOLD bytes): the
 * receiver says where, the sender writes there and says done. Several may
 * wait for their answers at once. A granted receive starts at WRITE.
 */
enum bolt_rendezvous_phase {
	BOLT_RENDEZVOUS_ASK,            /* the request is still to be sent */
	BOLT_RENDEZVOUS_WAIT,           /* asked, or waiting for its grant (grant_awaited);
					 * operations behind it go on */
	BOLT_RENDEZVOUS_WRITE,          /* answered: the write (stripes, or data and DONE) to post */
};

/*
 * The stripes of a transfer still to land, by data rail. On RC a stripe may
 * come twice: one that landed, but whose completion came back flushed at
 * the sender when the rail failed, is written again on the control rail
 * (bolt_failover.c). So the sender first asks which landed (STRIPE_KEY_ASK),
 * and the rails it is told had not are awaited on the control rail
 * (STRIPE_MOVED) even if their first write lands late: the buffer stays
 * until then, and no stripe counts twice.
 */
struct bolt_stripe_tally {
	uint32_t pending;               /* stripes still to land */
	uint32_t landed;                /* the rails whose stripe landed */
	uint32_t awaited;               /* the rails whose stripe comes again, moved */
};

/* An operation this endpoint started, or a reply it owes a peer (internal). */
struct bolt_transmit {
	enum bolt_wire_op op;           /* MESSAGE, WRITE, READ_REQUEST, READ_RESPONSE, WRITE_ACK */
	struct bolt_connection *connection;
	void *context;
	uint64_t flags;                 /* FI_COMPLETION, FI_TAGGED, FI_REMOTE_CQ_DATA, ... */
	bool internal;                  /* a reply: no completion for the application */
	uint8_t wire_flags;             /* internal: header flags of its own (a grant's QUIET) */
	struct iovec iov[BOLT_IOV_LIMIT];
	size_t iov_count;
	size_t length;
	size_t sent;                    /* bytes already put in segments */
	size_t received;                /* READ_REQUEST: bytes of the response placed */
	int in_flight;                  /* segments posted whose send has not completed */
	bool posted_last;               /* every segment is posted */
	enum bolt_protocol_kind protocol;
	enum bolt_rendezvous_phase phase;       /* RENDEZVOUS, GRANTED_RECEIVE */
	struct bolt_registration registration;      /* its buffer, while written from */
	bool covered;                   /* the buffer lies in an open MR: its registration may stay */
	bool pullable;                  /* RC: its receiver may pull it by RDMA read (bolt_pull.c), */
	bool pull_offered;              /* and its request said where */
	bool grant_awaited;             /* a tagged message whose receiver grants its receive
					 * ahead (bolt_tag_grant.c): a rendezvous waits for that
					 * grant, and asks nothing */
	size_t rendezvous_threshold;    /* 0: FI_BOLT_RENDEZVOUS_THRESHOLD; else this message's own */
	uint32_t rail_mask;             /* WRITE phase: the data rails to stripe across, or none;
					 * READ_REQUEST, RENDEZVOUS_READY: those offered */
	uint32_t rail_rkeys[BOLT_MAX_CONNECTION_RAILS];     /* and the target's key on each;
							     * offered: our buffer's */
	struct bolt_stripe_tally stripes;       /* READ_REQUEST: the stripes of its data */
	uint32_t moved_rails;           /* WRITE phase: the stripes of these rails, which failed,
					 * still to go on the control rail (bolt_failover.c) */
	uint32_t uncertain_rails;       /* RC: of those, the ones posted that came back flushed,
					 * which may have landed: the target says first */
	uint32_t asked_rails;           /* which the STRIPE_KEY_ASK in flight asked about */
	int key_port;                   /* RENDEZVOUS_READY, STRIPE_KEY, a READ_REQUEST with
					 * WRITE_BACK: the port (bolt_connection_port_index)
					 * of ours the key it gives is on, sent in its offset */
	bool key_asked;                 /* for them, the target's key on the control rail's port
					 * and which landed (STRIPE_KEY_ASK), not yet answered */
	bool ahead;                     /* internal, queued ahead of the others (bolt_transmit_queue) */
	bool landed_at_target;          /* the answer: every byte landed, and the transfer
					 * completed there: nothing of it is written again */
	uint64_t target_address;        /* WRITE phase, DIRECT_WRITE: where to write */
	bool plain_write;               /* DIRECT_WRITE: no immediate data, no receive consumed */
	uint32_t target_rkey;
	const struct bolt_rail_port *target_port;       /* the control rail's port target_rkey is for
							 * (when the answer or the key came) */
	size_t target_length;
	bool silent;                    /* fi_inject: counters, but no CQ entry */
	bool reply_pending;             /* WRITE waits for its ack, READ for its data */
	int status;                     /* 0 or a positive FI_E* code */
	uint64_t tag;
	uint32_t cq_data;               /* to send; WRITE_ACK, READ_RESPONSE: the status */
	uint64_t remote_address;
	uint64_t remote_key;
	uint64_t request_id;            /* ours, or the peer's for a reply */
	uint64_t message_number;        /* an untagged message's, as the peer counts them: the
					 * receive it grants ahead for it (header tag) */
	char *inject_copy;              /* FI_INJECT: the data, owned */
	/* An upper layer's own completion instead of the CQ and counters; NULL: the application's. */
	void (*complete)(struct bolt_transmit *transmit);
	struct bolt_transmit *prev, *next;
};

/* Queues a transmit on its connection and sends what credits allow. */
void bolt_transmit_start(struct bolt_transmit *transmit);
/* Sends queued segments while the connection has credits, buffers and queue room. */
void bolt_transmit_progress(struct bolt_connection *connection);
/*
 * The connection's link is between other ports than the domains' own: the
 * rail requests queued go, and reads queued offer their buffers on the
 * link's port.
 */
void bolt_transmit_other_ports(struct bolt_connection *connection);
/* The peer revoked key's grant: writes to it still queued as direct ones ask instead. */
void bolt_transmit_revoked(struct bolt_connection *connection, uint64_t key);
/*
 * A message written into a granted receive, or a direct write, not posted
 * yet: it asks instead (its grant revoked, or for a port the control rail
 * has left).
 */
void bolt_transmit_ask_instead(struct bolt_connection *connection, struct bolt_transmit *transmit);
/*
 * The peer answered the rendezvous request_id asked for: the transmit, back
 * among those with something to post; NULL if none waits for that answer.
 */
struct bolt_transmit *bolt_transmit_answered(struct bolt_connection *connection, uint64_t request_id);
/* Transmit, waiting for its answer or grant, goes back among those with something to post. */
void bolt_transmit_resume(struct bolt_connection *connection, struct bolt_transmit *transmit);
/* The next id from a counter: never 0 in its low bits, never with BOLT_REQUEST_ID_GRANTED. */
uint64_t bolt_transmit_next_id(uint64_t *next_id);
/* A send still posted outlives its connection: record keeps the registration its transmit lent. */
void bolt_transmit_orphaned(struct bolt_control_buffer *record);
/* Ends every transmit of a failed connection with its error. */
void bolt_transmit_fail_all(struct bolt_connection *connection);
/* Frees every transmit of a connection being destroyed, reporting none. */
void bolt_transmit_discard_all(struct bolt_connection *connection);
void bolt_transmit_free(struct bolt_transmit *transmit);
/*
 * The buffer of transmit may be freed from now on (its operation ended with
 * an error first): what is still to be sent comes from a copy. 0 or
 * -FI_ENOMEM. Data already handed to the device is its until completion.
 */
int bolt_transmit_detach(struct bolt_transmit *transmit);
/* Its last message is posted: it leaves the queue for the list that waits for completions. */
void bolt_transmit_posted_all(struct bolt_transmit *transmit);
/* Gives an internal message a payload of its own: a copy of length bytes. 0 or -FI_ENOMEM. */
int bolt_transmit_attach(struct bolt_transmit *transmit, const void *payload, size_t length);
/*
 * A message of the protocol's own (a reply, an answer) to request_id, with
 * status in cq_data; NULL, the connection failed, when out of memory.
 */
struct bolt_transmit *bolt_transmit_internal(struct bolt_connection *connection, enum bolt_wire_op op,
					     uint64_t request_id, uint32_t status);
/* The operation of ours that a WRITE_ACK or READ_RESPONSE answers; NULL if none. */
struct bolt_transmit *bolt_transmit_find_request(struct bolt_connection *connection,
						 enum bolt_wire_op op, uint64_t request_id);
/* Its reply came (status 0 or a positive FI_E*): it may complete now. */
void bolt_transmit_reply_arrived(struct bolt_transmit *transmit, int status);
/*
 * Queues an internal transmit ahead of everything queued (ahead), or behind,
 * and sends what may go; bolt_transmit_start queues behind.
 */
void bolt_transmit_queue(struct bolt_transmit *transmit, bool ahead);
/* Ends transmit once every segment went out and any reply it waits for came. */
void bolt_transmit_check_done(struct bolt_transmit *transmit);

#endif /* BOLT_TRANSMIT_H */
