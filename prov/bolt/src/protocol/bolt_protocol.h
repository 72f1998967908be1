/*
 * bolt_protocol.h: the protocol layer (layer 5): what is sent and received
 * over a connection. Per peer (bolt_peer.c) the operations this end started
 * (transmits) and what arrives from it; per endpoint the posted receives and
 * the messages no receive has taken yet (matching). The RDMA protocols'
 * entry points are in bolt_rdma.h. Files of this layer call down into the
 * connection layer (bolt_connection.h), which tells them what happened
 * through the events bolt_peer.c implements.
 */
#ifndef BOLT_PROTOCOL_H
#define BOLT_PROTOCOL_H

#include <sys/uio.h>
#include <uthash.h>

#include "bolt_attr.h"
#include "connection/bolt_connection.h"

struct bolt_endpoint;
struct bolt_mr;

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
	BOLT_RENDEZVOUS_WAIT,           /* asked; operations behind it go on */
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

/* A posted fi_recv or fi_trecv. */
struct bolt_receive {
	void *context;
	uint64_t flags;
	bool tagged;
	struct iovec iov[BOLT_IOV_LIMIT];
	size_t iov_count;
	size_t length;
	bool covered;                   /* the buffer lies in an open MR */
	fi_addr_t source;               /* FI_ADDR_UNSPEC: any */
	uint64_t tag;
	uint64_t ignore;
	uint64_t sequence;              /* posting order: a granted receive given back keeps its place */
	bool cancelled;                 /* fi_cancel while granted: ends when given back */
	/* As a transmit's, told the message's length and status (0 or positive FI_E*). */
	void (*complete)(struct bolt_receive *receive, size_t message_length, int status);
	struct bolt_receive *prev, *next;
};

/* The sender's: where the peer's receive for our untagged message number is. */
struct bolt_receive_grant {
	uint64_t number;
	uint64_t address;
	uint64_t length;
	uint32_t rkey;
	const struct bolt_rail_port *port;      /* ours the rkey is for: the control rail's then
						 * (NULL: it moved since), of no use on another */
};

/* A message that arrived before a receive matched it; data is a copy. */
struct bolt_unexpected {
	struct bolt_connection *connection;
	bool tagged;
	uint8_t wire_flags;
	uint64_t tag;
	uint32_t cq_data;
	size_t length;
	size_t received;
	char *data;                     /* NULL for a rendezvous: its data waits at the sender */
	size_t capacity;                /* bytes at data: grown as the data arrives */
	struct bolt_inbound *rendezvous;        /* a rendezvous: its record, waiting for a receive */
	void *claim_context;            /* FI_PEEK | FI_CLAIM: kept for the FI_CLAIM receive with it */
	struct bolt_unexpected *prev, *next;
};


/*
 * The message a connection is receiving (segments arrive in order), or a
 * rendezvous message or write whose data the peer will place by RDMA write:
 * those wait for their DONE in the connection's rendezvous list.
 */
struct bolt_inbound {
	bool active;
	bool write;                     /* a rendezvous fi_write: no receive */
	bool tagged;
	uint8_t wire_flags;
	uint64_t tag;
	uint32_t cq_data;
	struct bolt_receive *receive;   /* matched: segments go to the user's buffer */
	struct bolt_unexpected *unexpected;     /* else: to a copy */
	size_t received;
	size_t length;
	bool rendezvous;                /* the data comes by RDMA write, then DONE */
	uint64_t request_id;            /* the sender's, for the rendezvous answer */
	struct bolt_registration registration;      /* the receive buffer, while written to */
	bool covered;                   /* that buffer lies in an open MR: the registration may stay */
	struct bolt_stripe_tally stripes;       /* the data rail stripes */
	struct bolt_inbound *prev, *next;       /* peer->rendezvous */
};

/*
 * The protocols' state for one peer: the owner of a connection
 * (connection->owner), made and dropped through its events.
 */
struct bolt_peer {
	struct bolt_connection *connection;
	struct bolt_endpoint *endpoint;
	fi_addr_t fi_addr;              /* the peer in the endpoint's AV, if inserted */
	struct bolt_region_grant *grants;       /* the peer's regions we may write directly */
	uint64_t direct_writes;         /* posted into them, */
	uint64_t plain_writes;          /* of which without immediate data */
	uint64_t reads_written_back;    /* our reads whose data the peer wrote by RDMA */
	uint64_t stripes_moved;         /* stripes of a failed data rail sent on the control rail */
	size_t unexpected_bytes;        /* kept of its messages no receive has taken yet:
					 * data and bookkeeping (FI_BOLT_UNEXPECTED_LIMIT) */
	/* Receives granted ahead: ours to the peer, */
	uint64_t messages_arrived;      /* its untagged messages so far */
	struct bolt_granted_receive *granted;   /* for its next ones, in order */
	uint32_t granted_count;
	uint64_t granted_written;       /* its messages written into them, */
	uint64_t granted_by_immediate;  /* of which with immediate data naming them (no DONE) */
	uint64_t receives_granted;      /* all it was granted, */
	uint64_t grant_messages;        /* in so many messages */
	uint32_t granted_landing;       /* ours written into its grants on UC, not all arrived yet:
					 * the peer counts them when they land, so our next untagged
					 * messages wait (bolt_rewrite.c) */
	bool grants_revoking;           /* it was told to stop using them; none granted until it answers, */
	uint64_t grants_revoke_deadline_ns;     /* which it must by then (FI_BOLT_LIVENESS_TIMEOUT) */
	/* and the peer's to us. */
	uint64_t messages_started;      /* our untagged messages so far */
	uint64_t messages_posted;       /* the last of them that went out (or took its grant) */
	struct bolt_receive_grant peer_grants[BOLT_RECEIVE_GRANTS_MAX];    /* a ring, by number */
	uint32_t peer_grants_first;
	uint32_t peer_grants_count;
	uint64_t next_request_id;
	struct bolt_transmit *transmits;        /* in order, with something still to post */
	struct bolt_transmit *waiting;          /* rendezvous asked: nothing to post until answered */
	struct bolt_transmit *posted;           /* all posted: waiting for completions or replies */
	struct bolt_transmit *streaming;        /* the one whose segments are going out */
	struct bolt_inbound inbound;
	struct bolt_inbound *rendezvous;        /* placed by RDMA write, waiting for DONE */
	int write_status;               /* of the write whose segments are arriving */
};

static inline struct bolt_peer *bolt_peer_of(const struct bolt_connection *connection)
{
	return connection->owner;
}

/* The connection events the protocols implement (bolt_peer.c). */
extern const struct bolt_connection_events bolt_peer_events;
/* The peer's fi_addr in the endpoint's AV, looked up again while it is unknown. */
fi_addr_t bolt_peer_fi_addr(struct bolt_connection *connection);
/* Whether operations wait on the connection: transmits, replies, or data coming in. */
bool bolt_peer_busy(const struct bolt_connection *connection);
/*
 * The peer did not answer our revoke of what (a region's grant, receives
 * granted) within FI_BOLT_LIVENESS_TIMEOUT: says so, naming it, and fails
 * its connection (FI_ETIMEDOUT), which gives back what it held.
 */
void bolt_peer_fail_unanswered(struct bolt_connection *connection, const char *what);

/* Sending (bolt_transmit.c) and receiving (bolt_receive.c). */
/* Queues a transmit on its connection and sends what credits allow. */
void bolt_transmit_start(struct bolt_transmit *transmit);
/* Sends queued segments while the connection has credits, buffers and queue room. */
void bolt_transmit_progress(struct bolt_connection *connection);
/*
 * Over FI_BOLT_UNEXPECTED_LIMIT of one peer's unexpected data, the receives its
 * messages took are held back by their link and the peer waits for credits; per
 * peer, since a receiver full of one peer's messages must still take another's.
 * Back under it (domain->release_held), links post them at the next progress.
 */
bool bolt_receive_over_limit(const struct bolt_connection *connection);
/* Why a message cannot be trusted by its connection (its bounds), or NULL. */
const char *bolt_receive_check(const struct bolt_wire_header *header);
/* A message the connection layer checked: handled by its op. */
void bolt_receive_message(struct bolt_connection *connection, const struct bolt_wire_header *header,
			  const char *payload, size_t payload_length);
/* A write with immediate data landed for connection: no message, its data is in place. */
void bolt_receive_landed(struct bolt_connection *connection, const struct ibv_wc *wc);
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

#endif /* BOLT_PROTOCOL_H */
