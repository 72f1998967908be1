/*
 * bolt_protocol.h: the protocol layer (layer 5): what is sent and received
 * over a connection. Per peer (bolt_peer.c) the operations this end started
 * (transmits, bolt_transmit.h) and what arrives from it; per endpoint the
 * posted receives and the messages no receive has taken yet (matching). The
 * RDMA protocols' entry points are in bolt_rdma.h. Files of this layer call down into the
 * connection layer (bolt_connection.h), which tells them what happened
 * through the events bolt_peer.c implements.
 */
#ifndef BOLT_PROTOCOL_H
#define BOLT_PROTOCOL_H

#include <sys/uio.h>
#include <uthash.h>

#include "protocol/bolt_transmit.h"

struct bolt_endpoint;
struct bolt_mr;

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
	/* RC: the sender's buffer, which this end may pull by RDMA read (bolt_pull.c) */
	uint64_t pull_address;
	uint32_t pull_key;
	const struct bolt_rail_port *pull_port; /* ours the key is for; NULL: none offered */
	bool pulling;                   /* the read is posted */
	bool granted;                   /* a tagged receive granted ahead (bolt_tag_grant.c), */
	bool revoking;                  /* asked back from the sender, no answer yet, */
	uint64_t revoke_deadline_ns;    /* which it owes by then (FI_BOLT_LIVENESS_TIMEOUT), */
	bool kept;                      /* or answered that its message took it */
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
	uint64_t messages_pulled;       /* its messages this end read from its buffer by RDMA */
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
	/* Tagged receives granted ahead (bolt_tag_grant.c): ours, named by these ids, */
	uint64_t next_granted_id;
	uint64_t tags_granted;          /* granted so far, */
	/* and the peer's for messages we have not started yet. */
	struct bolt_tag_grant *tag_grants;
	uint32_t tag_grant_count;
	uint64_t tag_grants_taken;      /* our messages written into the peer's grants */
	struct bolt_transmit *transmits;        /* in order, with something still to post */
	struct bolt_transmit *waiting;          /* rendezvous asked, or waiting for their tag's
						 * grant: nothing to post until answered */
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

/* Receiving (bolt_receive.c). */
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

#endif /* BOLT_PROTOCOL_H */
