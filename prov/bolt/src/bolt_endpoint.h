/*
 * bolt_endpoint.h: the RDM endpoint and what it is made of: its connections
 * to peers (layer 4), the operations it has started (transmits) and the
 * receives it has posted or messages it has not matched yet (layer 5), and
 * the memory regions bound to it.
 */
#ifndef BOLT_ENDPOINT_H
#define BOLT_ENDPOINT_H

#include <poll.h>
#include <sys/uio.h>
#include <uthash.h>

#include "bolt_attr.h"
#include "bolt_provider.h"
#include "connection/bolt_side_channel.h"
#include "protocol/bolt_wire.h"

/* Named in libfabric 1.18 and later, right after FI_OPT_XPU_TRIGGER. */
#define BOLT_OPT_CUDA_API_PERMITTED (FI_OPT_XPU_TRIGGER + 1)
#define BOLT_OPT_SHARED_MEMORY_PERMITTED (FI_OPT_XPU_TRIGGER + 2)

/* Bytes of payload one control buffer carries after the wire header. */
#define BOLT_SEGMENT_PAYLOAD (4096 - sizeof(struct bolt_wire_header))

enum bolt_counter_kind {
	BOLT_COUNTER_SEND,
	BOLT_COUNTER_RECV,
	BOLT_COUNTER_READ,
	BOLT_COUNTER_WRITE,
	BOLT_COUNTER_REMOTE_READ,
	BOLT_COUNTER_REMOTE_WRITE,
	BOLT_COUNTER_KINDS,
};

/*
 * Large messages on devices with RDMA write (from FI_BOLT_RENDEZVOUS_THRESHOLD
 * bytes): the receiver says where, the sender writes there and says done.
 * Anything that cannot be registered falls back to segments. Several may
 * wait for their answers at once.
 */
enum bolt_rendezvous_phase {
	BOLT_RENDEZVOUS_NONE,           /* segments */
	BOLT_RENDEZVOUS_ASK,            /* the request is still to be sent */
	BOLT_RENDEZVOUS_WAIT,           /* asked; operations behind it go on */
	BOLT_RENDEZVOUS_WRITE,          /* answered: the write (stripes, or data and DONE) to post */
	BOLT_RENDEZVOUS_DIRECT,         /* a write into a granted region: no request, no answer */
	BOLT_RENDEZVOUS_BOUNCE,         /* a message written whole into the peer's bounce buffer */
};

/*
 * A region of the peer's that this end may write directly (protocol/
 * bolt_direct_write.c): the peer holds a device registration of the whole
 * MR for as long as the MR is open, and said where it is.
 */
/* Ports a link may be on: the domain's own, and each stripe port (bolt_link_port_index). */
#define BOLT_LINK_PORTS_MAX (1 + BOLT_MAX_STRIPE_PORTS)

/*
 * Target: a closed region's registration, kept until every peer told of the
 * close has answered (protocol/bolt_direct_write.c).
 */
struct bolt_revoke {
	uint64_t id;
	struct bolt_mr_cache_entry *grants[BOLT_LINK_PORTS_MAX];        /* the region's, by port */
	struct bolt_connection **owed;  /* connections whose answer is still to come */
	int owed_count;
	bool telling;                   /* the peers are being told: kept even with none owing */
	struct bolt_revoke *prev, *next;        /* domain->revokes */
};

struct bolt_region_grant {
	uint64_t key;                   /* the MR's libfabric key */
	uint64_t base;                  /* the address that names the MR's first byte in RMA calls */
	uint64_t length;
	uint64_t target_address;        /* that byte in the peer's memory */
	uint32_t rkey;
	bool quiet;                     /* the peer needs no word of writes without remote CQ data */
	UT_hash_handle hh;              /* connection->grants, by key */
};

/*
 * A data rail: a queue pair to the peer of its own for large writes, so that
 * bulk data never queues in front of the control rail's headers. Made on the
 * first rendezvous, with the peer's answer over the control rail.
 */
enum bolt_data_rail_state {
	BOLT_DATA_RAIL_NONE,            /* not asked for */
	BOLT_DATA_RAIL_REQUESTED,       /* our queue pair made, the peer asked to connect it */
	BOLT_DATA_RAIL_PROBING,         /* stripe rail, asker: connected, probe sent */
	BOLT_DATA_RAIL_AWAITING_PROBE,  /* stripe rail, answerer: connected, a receive posted for it */
	BOLT_DATA_RAIL_PROBED,          /* stripe rail, answerer: the probe came; the asker's READY not */
	BOLT_DATA_RAIL_READY,           /* connected at both ends */
	BOLT_DATA_RAIL_UNAVAILABLE,     /* no queue pair to spare, no port reached: writes go elsewhere */
};

struct bolt_data_rail {
	enum bolt_data_rail_state state;
	struct bolt_rail_port *port;    /* where its queue pair is */
	struct ibv_qp *qp;
	uint32_t psn;
	int candidate;                  /* stripe rail, asker: the peer's stripe port it tries */
	uint32_t probe_nonce;           /* stripe rail: what the current attempt's probe carries */
	uint64_t probe_deadline_ns;     /* stripe rail, answerer: when the probe is late; 0: not sent */
	int outstanding_sends;          /* stripes posted, completion pending */
	uint64_t bytes_written;         /* by the stripes of this end's writes */
};

/*
 * A buffer's device registrations for one transfer: on the domain's port,
 * and on each stripe port its stripes cross, made when a stripe needs one.
 */
struct bolt_registration {
	struct bolt_mr_cache_entry *primary;
	struct bolt_mr_cache_entry *stripe[BOLT_MAX_STRIPE_PORTS];
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
	enum bolt_rendezvous_phase rendezvous;  /* a large message written by RDMA */
	struct bolt_registration registration;      /* its buffer, while written from */
	bool covered;                   /* the buffer lies in an open MR: its registration may stay */
	uint32_t rail_mask;             /* WRITE phase: the data rails to stripe across, or none;
					 * READ_REQUEST, RENDEZVOUS_READY: those offered */
	uint32_t rail_rkeys[BOLT_MAX_CONNECTION_RAILS];     /* and the target's key on each;
							     * offered: our buffer's */
	uint32_t stripes_pending;       /* READ_REQUEST: stripes of its data still to land */
	uint64_t target_address;        /* WRITE, DIRECT phases: where to write */
	bool plain_write;               /* DIRECT phase: no immediate data, no receive consumed */
	uint32_t target_rkey;
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
	bool receive_granted;           /* WRITE phase: into the receive the peer granted, no answer */
	char *inject_copy;              /* FI_INJECT: the data, owned */
	/* Its owner's own completion, instead of the application's CQ entry and
	 * counters (an upper layer's transfers); NULL for the application's. */
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
	/* As a transmit's, told the message's whole length and the status (0 or a
	 * positive FI_E*); NULL for the application's receives. */
	void (*complete)(struct bolt_receive *receive, size_t message_length, int status);
	struct bolt_receive *prev, *next;
};

/*
 * Receives granted ahead (protocol/bolt_receive_grant.c). The receiver's
 * record of one: the peer's untagged message it is for, and its buffer's
 * registration while the peer may write it.
 */
struct bolt_granted_receive {
	uint64_t number;
	struct bolt_receive *receive;
	struct bolt_registration registration;
	struct bolt_granted_receive *prev, *next;       /* connection->granted, by number */
};

/* The sender's: where the peer's receive for our untagged message number is. */
struct bolt_receive_grant {
	uint64_t number;
	uint64_t address;
	uint64_t length;
	uint32_t rkey;
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
	struct bolt_inbound *rendezvous;        /* a rendezvous: its record, waiting for a receive */
	struct bolt_receive *claimed;   /* matched while it was still arriving */
	void *claim_context;            /* FI_PEEK | FI_CLAIM: kept for the FI_CLAIM receive with it */
	struct bolt_unexpected *prev, *next;
};

/*
 * What a connection's side channel shows of messages lost on unreliable
 * queue pairs (connection/bolt_loss.c): counts asked for while it waits.
 */
struct bolt_loss_watch {
	uint32_t seen_received;         /* arrivals at the last look, */
	uint32_t seen_stripes;
	uint64_t quiet_since_ns;        /* and since when nothing arrived */
	uint64_t asked_ns;              /* our last question; */
	bool asking;                    /* its answer still to come */
	uint32_t sent_at_ask, stripes_sent_at_ask;              /* our counts when we asked, */
	uint32_t sent_at_previous_ask, stripes_sent_at_previous_ask;    /* and the time before */
	uint32_t confirmed_sent, confirmed_stripes;     /* the peer had all of these */
	bool answered;                  /* the peer's counts, judged after a grace period */
	uint64_t answered_ns;
	uint32_t peer_sent, peer_received, peer_stripes_sent, peer_stripes_received;
};

enum bolt_connection_state {
	BOLT_CONNECTION_CONNECTING,     /* our hello sent, waiting for the reply */
	BOLT_CONNECTION_WAITING_READY,  /* replied to the peer's hello, waiting for ready */
	BOLT_CONNECTION_WAITING_CONNECTED,      /* a new link: ready sent, waiting for the peer's
						 * queue pair to connect to ours */
	BOLT_CONNECTION_WAITING_LINK,   /* the peer's hello waits for our link to its domain,
					 * still connecting, to join it */
	BOLT_CONNECTION_WAITING_PROBED, /* initiator: a new link's probe sent, waiting for word */
	BOLT_CONNECTION_WAITING_PROBE,  /* answerer: waiting for the probe, then the word of it */
	BOLT_CONNECTION_ESTABLISHED,
	BOLT_CONNECTION_FAILED,
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
	uint32_t stripes_pending;       /* data rail stripes still to arrive */
	struct bolt_inbound *prev, *next;       /* connection->rendezvous */
};

/*
 * A link (connection/bolt_link.c): the queue pair of the control rail between
 * this domain and one peer domain, shared by the connections of every pair of
 * their endpoints. Its receives and the peer's credits for them belong to the
 * link; each message names its connection's slot. Operations, sequence and
 * loss stay per connection.
 */
/* Receives a link posts for its peer, which are also the peer's credits. */
#define BOLT_LINK_RECEIVE_DEPTH 32
/* Receives a link posts again together (bolt_receive.c): a quarter of its depth. */
#define BOLT_LINK_REPOST_BATCH 8

/*
 * The buffers a link sets aside for its peer's messages written whole, one
 * per receive it posts for the peer (protocol/bolt_bounce.c).
 */
struct bolt_bounce {
	char *memory;                   /* NULL: none */
	size_t size;                    /* of each buffer: a header and its payload */
	struct bolt_mr_cache_entry *entry; /* their registration on the link's port */
};

/* Where the peer's bounce buffers are: size 0, none. */
struct bolt_peer_bounce {
	uint64_t address;
	uint32_t rkey;
	uint32_t size;
};

struct bolt_link {
	struct bolt_domain *domain;
	struct bolt_rail_port *port;    /* where its queue pair is: the domain's own, or another
					 * that reaches the peer when that does not */
	int peer_port;                  /* the peer's port of it, by the same numbering */
	bool probing;                   /* answerer: waiting for the probe that shows the ports meet */
	bool probe_arrived;
	uint32_t probe_nonce;
	uint64_t peer_domain_id;
	bool shareable;                 /* others may join: a peer domain that is not this one */
	bool retiring;                  /* lost a message (and a credit with it): no one joins */
	bool failing;                   /* bolt_link_fail under way: its connections fail in turn */
	struct ibv_qp *qp;              /* NULL once retired */
	uint32_t psn;
	uint32_t peer_qpn;              /* 0 until connected */
	bool established;               /* connected at both ends: others may join */
	union ibv_gid peer_gid;
	struct bolt_connection *slots[BOLT_LINK_SLOTS];
	int users;
	int next_slot;                  /* where the search for a free slot starts: round robin */
	uint32_t receive_depth;         /* receives posted for the peer, and its credits */
	uint32_t peer_receive_depth;    /* what the peer posted for us */
	uint32_t send_credits;          /* receives the peer has posted for us */
	uint32_t credits_to_return;
	struct bolt_bounce bounce;      /* ours, for the peer's messages */
	struct bolt_peer_bounce peer_bounce;
	uint32_t bounces_sent;          /* into the peer's buffers, which are used in turn */
	struct bolt_control_buffer *unposted[BOLT_LINK_REPOST_BATCH]; /* handled, to post again;
								       * reclaimed with the link */
	uint32_t unposted_count;
	struct bolt_control_buffer *held[BOLT_LINK_RECEIVE_DEPTH]; /* handled messages' receives
								  * not posted again while their
								  * connection is over its
								  * unexpected limit */
	uint32_t held_count;
	int outstanding_sends;          /* posted on its queue pair, send completion pending */
	uint64_t retired_generation;    /* retired: the domain poll its buffers wait for */
	struct bolt_link *prev, *next;  /* domain->links, or domain->retired_links */
};

struct bolt_connection {
	struct bolt_endpoint *endpoint;
	struct bolt_address peer;
	fi_addr_t fi_addr;              /* the peer in the endpoint's AV, if inserted */
	UT_hash_handle hh;              /* endpoint->connections, by peer address */
	enum bolt_connection_state state;
	int error;                      /* FAILED: the positive FI_E* operations get */
	bool loopback;                  /* the endpoint's own address: no side channel */
	uint64_t peer_domain_id;        /* WAITING_LINK: the domain of the peer that said hello */
	int attempt;                    /* initiator: which pair of ports a new link tries */
	int peer_port_count;            /* the peer's ports that may carry links */
	uint32_t probe_nonce;           /* a new link's probe: sent, or expected */
	uint64_t probe_deadline_ns;     /* answerer: the probe is late from then on; 0: not sent */
	bool has_stream;
	struct bolt_side_channel_stream stream;
	struct bolt_link *link;         /* the control rail's queue pair, maybe shared; NULL: none */
	uint8_t slot;                   /* this connection's on the link, the same at both ends */
	uint8_t slot_nonce;
	struct bolt_data_rail data_rails[BOLT_MAX_CONNECTION_RAILS];
	uint32_t send_sequence;
	uint32_t receive_sequence;
	uint32_t stripes_sent;          /* data rail stripes and direct writes posted to the peer, */
	uint32_t stripes_received;      /* and arrived from it */
	struct bolt_region_grant *grants;       /* the peer's regions we may write directly */
	uint64_t direct_writes;         /* posted into them, */
	uint64_t plain_writes;          /* of which without immediate data */
	uint64_t reads_written_back;    /* our reads whose data the peer wrote by RDMA */
	struct bolt_loss_watch loss;
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
	bool grants_revoking;           /* it was told to stop using them; none granted until it answers */
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
	uint64_t failed_generation;     /* FAILED: the domain poll its buffers wait for */
	bool reclaim_pending;           /* FAILED: buffers still posted on the lost QP */
	uint64_t started_ns;            /* when connecting began, for its timeout */
	uint64_t crossing_deadline_ns;  /* CONNECTING, our side channel dropped: the peer's hello
					 * is late from then on; 0: not waiting for one */
};

/*
 * The record of a control buffer while a send or receive of it is posted:
 * the work completion its WR carries, and whom it belongs to.
 */
struct bolt_control_buffer {
	struct bolt_work_completion work;
	struct bolt_link *link;                 /* a control rail send's or receive's */
	struct bolt_connection *connection;     /* a send's; NULL: free, a receive, or its
						 * connection left the link */
	struct bolt_transmit *transmit;         /* a send's operation */
	int send_slots;                         /* send queue entries its completion retires */
	int data_rail;                          /* a stripe's or its receive's rail; -1: control */
	bool posted;
	bool holds_registration;                /* a send that outlived its connection (bolt_link.c): */
	struct bolt_registration registration;  /* its RDMA write's buffer, released with it */
	bool covered;
};

/* Control buffers (protocol/bolt_control.c); all under the domain lock. */
struct bolt_control_buffer *bolt_control_buffer_get(struct bolt_domain *domain);
void bolt_control_buffer_put(struct bolt_domain *domain, struct bolt_control_buffer *record);
char *bolt_control_buffer_data(struct bolt_domain *domain, const struct bolt_control_buffer *record);
struct bolt_control_buffer *bolt_control_buffer_of_work(struct bolt_work_completion *work);
/* Returns the buffers still posted for connection, whose queue pair is gone. */
void bolt_control_buffer_reclaim(struct bolt_domain *domain, struct bolt_connection *connection);

/* Accepted side channels whose peer has not said hello yet. */
struct bolt_accepted {
	struct bolt_side_channel_stream stream;
	uint64_t deadline_ns;           /* its hello is late from then on: it is dropped */
	struct bolt_accepted *prev, *next;
};

struct bolt_mr {
	struct fid_mr mr_fid;
	struct bolt_domain *domain;
	struct bolt_endpoint *endpoint; /* FI_MR_ENDPOINT: bound with fi_mr_bind */
	bool enabled;
	uint64_t access;
	char *address;
	size_t length;
	uint64_t requested_key;         /* without FI_MR_PROV_KEY, the key it gets when enabled */
	/* Held while peers may write it directly: one per port the links to them are on
	 * (bolt_link_port_index). */
	struct bolt_mr_cache_entry *grants[BOLT_LINK_PORTS_MAX];
	UT_hash_handle hh;              /* by key: in the endpoint's or the domain's table */
};

/*
 * A layer above the point-to-point path attached to an endpoint (the
 * collectives): the endpoint calls it through this table without knowing
 * what it is, and keeps the layer's state for it. All but join run with the
 * domain lock held.
 */
struct bolt_endpoint_upper_ops {
	/* fi_join. */
	int (*join)(struct bolt_endpoint *endpoint, const void *addr, uint64_t flags,
		    struct fid_mc **mc_fid, void *context);
	/* Each progress of the endpoint, after its connections'. */
	void (*progress)(struct bolt_endpoint *endpoint);
	/* Whether the endpoint may not close yet; it logs why. */
	bool (*busy)(const struct bolt_endpoint *endpoint);
	/* Frees the layer's state, once the endpoint's connections and receives are gone. */
	void (*destroy)(struct bolt_endpoint *endpoint);
};

struct bolt_endpoint {
	struct fid_ep ep_fid;
	struct bolt_domain *domain;
	struct fi_info *info;
	uint64_t caps;
	uint64_t transmit_op_flags;
	uint64_t receive_op_flags;
	bool enabled;
	/* The application's transmits not yet completed, at most transmit_queue_size
	 * (tx_attr->size): more are refused with -FI_EAGAIN until progress ends some. */
	size_t transmits_outstanding;
	size_t transmit_queue_size;

	struct bolt_cq *transmit_cq;
	struct bolt_cq *receive_cq;
	bool transmit_selective;        /* FI_SELECTIVE_COMPLETION on the transmit CQ */
	bool receive_selective;
	struct bolt_cntr *counters[BOLT_COUNTER_KINDS];
	struct bolt_av *av;
	struct bolt_eq *eq;

	struct bolt_address address;
	struct bolt_side_channel_listener listener;
	struct bolt_connection *connections;    /* hash by peer address */
	struct bolt_accepted *accepted;
	bool handshakes_pending;                /* side channels need every progress call */
	uint64_t side_channels_watched_ns;      /* else they are looked at this often */
	struct pollfd *side_channel_polls;      /* one poll looks at them all */
	size_t side_channel_poll_capacity;

	struct bolt_receive *posted;            /* fi_recv, in order */
	uint64_t receives_posted;               /* numbers them (bolt_receive's sequence) */
	/* Receives granted ahead: untagged ones for any source go to grant_peer, */
	struct bolt_connection *grant_peer;
	struct bolt_connection *last_large_sender;      /* whom two large messages in a row name */
	uint32_t unspecified_grants;            /* granted receives for any source, all peers' */
	struct bolt_receive *posted_tagged;     /* fi_trecv, in order */
	struct bolt_unexpected *unexpected;
	struct bolt_unexpected *unexpected_tagged;

	struct bolt_mr *mrs;                    /* FI_MR_ENDPOINT: enabled on it, by key */
	int bound_mr_count;                     /* bound, enabled or not: must close first */
	bool cuda_api_permitted;
	bool shared_memory_permitted;
	const struct bolt_endpoint_upper_ops *upper;   /* NULL: no layer attached */
	void *upper_state;                              /* the attached layer's own */
	struct bolt_endpoint *prev, *next;      /* domain->endpoints */
};

int bolt_endpoint_open(struct fid_domain *domain_fid, struct fi_info *info,
		       struct fid_ep **ep_fid, void *context);
void bolt_endpoint_progress(struct bolt_endpoint *endpoint);

/*
 * Completions the protocols report; status is 0 or a positive FI_E* code.
 * A record with a completion function of its own goes there, else to the
 * endpoint's CQs and counters; either way the endpoint frees it.
 */
void bolt_endpoint_complete_transmit(struct bolt_endpoint *endpoint,
				     struct bolt_transmit *transmit);
void bolt_endpoint_complete_receive(struct bolt_endpoint *endpoint, struct bolt_receive *receive,
				    struct bolt_connection *connection, size_t length,
				    size_t message_length, uint8_t wire_flags, uint64_t tag,
				    uint32_t cq_data, int status);
/* A remote write or read landed in, or was served from, this endpoint's memory. */
void bolt_endpoint_count_remote(struct bolt_endpoint *endpoint, enum bolt_counter_kind kind,
				bool remote_cq_data, uint32_t cq_data, size_t length);

/* ---- Connections (connection/bolt_connection.c) ---- */

/* The connection to peer, started if there is none. NULL only when out of memory. */
struct bolt_connection *bolt_connection_get(struct bolt_endpoint *endpoint,
					    const struct bolt_address *peer);
/* Accepts side channels, advances handshakes, notices dead peers. */
void bolt_connection_progress_all(struct bolt_endpoint *endpoint);
/* Whether operations wait on the connection: transmits, replies, or data coming in. */
bool bolt_connection_busy(const struct bolt_connection *connection);
/* CLOCK_MONOTONIC in nanoseconds, the clock of connection timeouts. */
uint64_t bolt_connection_now_ns(void);
/* Fails the connection: every operation on it completes with error. */
void bolt_connection_fail(struct bolt_connection *connection, int error, const char *why);
void bolt_connection_destroy(struct bolt_connection *connection);
/* The peer's fi_addr in the endpoint's AV, looked up again while it is unknown. */
fi_addr_t bolt_connection_fi_addr(struct bolt_connection *connection);
/* Closing an endpoint: every connection, its queue pair and buffers, and accepted side channels. */
void bolt_connection_destroy_all(struct bolt_endpoint *endpoint);

/* Links (connection/bolt_link.c). */
/*
 * A link to peer_domain_id on the domain's port number port (0: its own,
 * 1 + k: stripe port k): its queue pair in INIT, receives posted.
 */
int bolt_link_create(struct bolt_domain *domain, int port, uint64_t peer_domain_id,
		     struct bolt_link **link);
/* The domain's ports that may carry links: its own, then the stripe ports with control buffers. */
int bolt_link_port_count(const struct bolt_domain *domain);
/* The number of the link's port among them. */
int bolt_link_port_index(const struct bolt_link *link);
/* The domain's port of that number (below bolt_link_port_count), carrying links or not. */
struct bolt_rail_port *bolt_link_port_of_index(struct bolt_domain *domain, int index);
/* The index-th of the domain's ports other than the one numbered skipped; NULL past the last. */
struct bolt_rail_port *bolt_link_other_port(struct bolt_domain *domain, int skipped, uint64_t index);
/*
 * Whether the link's queue pairs sit on both domains' own ports: else
 * transfers over it register on its ports, and its connections' rails are
 * asked for again once it is known (bolt_data_rail_link_moved).
 */
bool bolt_link_on_own_ports(const struct bolt_link *link);
/*
 * RTR and RTS towards the peer's queue pair qpn, whose link has the bounce
 * buffers peer_bounce describes; 0 or a negative error code.
 */
int bolt_link_connect(struct bolt_link *link, uint32_t qpn, uint32_t psn, const uint8_t *gid,
		      uint32_t receive_depth, const struct bolt_peer_bounce *peer_bounce);
/*
 * A link to peer_domain_id that more connections may join: an established
 * one, else one still connecting, which they wait for; or NULL.
 */
struct bolt_link *bolt_link_find_joinable(struct bolt_domain *domain, uint64_t peer_domain_id);
/* The joinable link whose queue pairs are qpn here and peer_qpn at peer_domain_id, or NULL. */
struct bolt_link *bolt_link_find(struct bolt_domain *domain, uint64_t peer_domain_id, uint32_t qpn,
				 uint32_t peer_qpn);
/* A slot this end may give a joining connection (round robin), or -1: the link is full. */
int bolt_link_free_slot(struct bolt_link *link);
/* The connection takes slot on link; -FI_EBUSY if it is taken. */
int bolt_link_join(struct bolt_link *link, struct bolt_connection *connection, int slot,
		   uint8_t slot_nonce);
/* The connection leaves its link, if it has one; the last to leave retires it. */
void bolt_link_leave(struct bolt_connection *connection);
/* The live connection in slot, or NULL. */
struct bolt_connection *bolt_link_connection(const struct bolt_link *link, uint8_t slot);
/* The queue pair failed: every connection on it fails. */
void bolt_link_fail(struct bolt_link *link, int error, const char *why);
/* Sends what the link's connections have queued, credits returned included. */
void bolt_link_progress(struct bolt_link *link);
/* Frees retired links whose buffers no completion can name any more. */
void bolt_link_reclaim(struct bolt_domain *domain);

/* Data rails (connection/bolt_data_rail.c). */
/* Asks the peer for the data rails not asked for yet, where queue pairs can be spared. */
void bolt_data_rail_request(struct bolt_connection *connection);
/*
 * The connection's link turned out to be on other ports than the domain's
 * own: the rails asked for meanwhile, beside the domain's own, are asked for
 * again beside the link's.
 */
void bolt_data_rail_link_moved(struct bolt_connection *connection);
/* The peer asks for a data rail: connect one to its queue pair, or refuse. */
void bolt_data_rail_requested(struct bolt_connection *connection, const struct bolt_wire_header *header,
			      const char *payload);
/* The peer answered our request. */
void bolt_data_rail_answered(struct bolt_connection *connection, const struct bolt_wire_header *header,
			     const char *payload);
/* Asker: the peer's stripe port took our probe, or (status) did not. */
void bolt_data_rail_probed(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* Answerer: the asker sent its probe; from now on it may be late. */
void bolt_data_rail_probe_sent(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* Answerer: the asker uses the probed stripe rail from now on. */
void bolt_data_rail_peer_ready(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* Answerer: stripe rails whose probe is late are refused; the asker tries our next port. */
void bolt_data_rail_check_probes(struct bolt_connection *connection, uint64_t now_ns);
/* Sets up domain->rail_probe, the wr_id of every probe and its receive. */
void bolt_data_rail_domain_init(struct bolt_domain *domain);
/* Whether the connection has a ready rail on another port than the domain's: another cable. */
bool bolt_data_rail_striping(const struct bolt_connection *connection);
/* The ready rails (a mask) with room for one more stripe each. */
uint32_t bolt_data_rail_ready(const struct bolt_connection *connection, bool with_room);
/* Posts a stripe as RDMA write with immediate data on rail; 0 or an errno. */
int bolt_data_rail_post_write(struct bolt_connection *connection, int rail,
			      struct bolt_control_buffer *record, const struct ibv_sge *sge,
			      uint64_t remote_address, uint32_t rkey, uint32_t immediate);
/* Posts the receive a stripe's immediate data consumes; 0 or an errno. */
int bolt_data_rail_post_receive(struct bolt_connection *connection, int rail,
				struct bolt_control_buffer *record);
void bolt_data_rail_destroy_all(struct bolt_connection *connection);

/* Loss (connection/bolt_loss.c). */
/*
 * Fails a connection that lost messages. Each lost SEND also took one of the
 * link's credits, which never comes back: no new connection joins the link.
 */
void bolt_loss_fail(struct bolt_connection *connection, const char *why);
/* While the connection waits for the peer and nothing arrives, compares counts with it. */
void bolt_loss_check(struct bolt_connection *connection, uint64_t now_ns);
/* A side channel message about counts; false if type is not one. */
bool bolt_loss_handle(struct bolt_connection *connection, uint16_t type, const void *body,
		      uint32_t length, uint64_t now_ns);

/* ---- Protocols (protocol/) ---- */

/* Queues a transmit on its connection and sends what credits allow. */
void bolt_transmit_start(struct bolt_transmit *transmit);
/* Sends queued segments while the connection has credits, buffers and queue room. */
void bolt_transmit_progress(struct bolt_connection *connection);
/* Posts the link's receives; 0 or a negative error code. */
int bolt_receive_post_initial(struct bolt_link *link);
/*
 * An endpoint keeps no more unexpected data from one peer than
 * FI_BOLT_UNEXPECTED_LIMIT: beyond it, the receives that peer's messages took
 * are held back, and the peer waits for credits (bolt_receive.c). Per peer,
 * not per endpoint: a receiver full of one peer's messages must still take
 * another's, which it may need first. When a connection falls back under the
 * limit (domain->release_held), every link of the domain posts what it held
 * again, at the next progress: not from inside matching, where a failed post
 * would fail connections while a receive is being handled.
 */
bool bolt_receive_over_limit(const struct bolt_connection *connection);
void bolt_receive_release_held(struct bolt_domain *domain);
/*
 * Initiator of a new link: a SEND of no bytes with nonce as immediate data,
 * which shows the answerer that the link's ports meet. 0 or a negative error.
 */
int bolt_transmit_probe(struct bolt_connection *connection, uint32_t nonce);
/*
 * The connection's link is between other ports than the domains' own: the
 * rail requests queued go, and reads queued offer their buffers on the
 * link's port.
 */
void bolt_transmit_other_ports(struct bolt_connection *connection);
/* The peer revoked key's grant: writes to it still queued as direct ones ask instead. */
void bolt_transmit_revoked(struct bolt_connection *connection, uint64_t key);
/*
 * The peer answered the rendezvous request_id asked for: the transmit, back
 * among those with something to post; NULL if none waits for that answer.
 */
struct bolt_transmit *bolt_transmit_answered(struct bolt_connection *connection, uint64_t request_id);
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

/* Rendezvous (protocol/bolt_rendezvous.c). */
bool bolt_rendezvous_wanted(const struct bolt_transmit *transmit);
/*
 * Whether a rendezvous write waits for the target's ack: only for delivery
 * completion. Otherwise it completes once its data went out ahead of DONE,
 * or its stripes did: the target accepted it in its answer.
 */
bool bolt_rendezvous_wants_ack(const struct bolt_transmit *transmit);
/* A rendezvous message arrived: its record, matched or waiting for a receive. */
void bolt_rendezvous_arrival(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* The receiver matched a rendezvous: tell the sender where to write. */
void bolt_rendezvous_answer(struct bolt_connection *connection, struct bolt_inbound *record);
/* Segments of a message or write that asked for a rendezvous: its record, taken out of the list. */
struct bolt_inbound *bolt_rendezvous_take(struct bolt_connection *connection, uint64_t request_id);
/* Gives back a record's registration and the record. */
void bolt_rendezvous_record_free(struct bolt_connection *connection, struct bolt_inbound *record);
/* Sender: the receiver answered; write, or fall back to segments. */
void bolt_rendezvous_answered(struct bolt_connection *connection, const struct bolt_wire_header *header,
			      const char *payload);
/* The immediate data that names request_id's transfer (write_back: a read's data written back). */
uint32_t bolt_rendezvous_immediate(const struct bolt_connection *connection, uint64_t request_id,
				   bool write_back);
/* Whether the connection's queue pair may lose messages (UC): then every write carries immediate data. */
bool bolt_rendezvous_unreliable(const struct bolt_connection *connection);
/*
 * Whether the connection may write with immediate data of its own on its
 * link: on UC, where the immediate names the slot; on RC only the link's
 * first connection (slot 0), which has the immediate whole (bolt_wire.h).
 */
bool bolt_rendezvous_may_write_immediate(const struct bolt_connection *connection);
/* The WR of a WRITE phase's one write: with immediate data naming the transfer (wr_id, flags: the caller's). */
void bolt_rendezvous_describe_write(const struct bolt_transmit *transmit, struct ibv_sge *sge,
				    struct ibv_send_wr *wr);
/* Sender: posts the stripes of a write phase across transmit->rail_mask; false when it must wait. */
bool bolt_transmit_stripes(struct bolt_connection *connection, struct bolt_transmit *transmit);
/* Receiver: a stripe's immediate data arrived on a data rail. */
void bolt_rendezvous_stripe_arrived(struct bolt_work_completion *work, const struct ibv_wc *wc);
/*
 * Receiver: a stripe landed (on a data rail, or on UC's control rail); wc
 * names its transfer. False if none waits for it.
 */
bool bolt_rendezvous_stripe_landed(struct bolt_connection *connection, const struct ibv_wc *wc);
/*
 * Whether transmit's buffer is worth registering for one RDMA transfer: a
 * single buffer a work request can carry, inside an open MR (its
 * registration stays cached) or from the rendezvous threshold up.
 */
bool bolt_rendezvous_registration_pays(const struct bolt_transmit *transmit);
/* Reader: the data of read is in its buffer, written back by the target: it completes. */
void bolt_rendezvous_read_written_back(struct bolt_connection *connection, struct bolt_transmit *read);
/* Reader: offers the target to write a large read's data back by RDMA; false if it cannot. */
bool bolt_rendezvous_read_prepare(struct bolt_transmit *read);
/*
 * The payload of a rendezvous answer or a read that names data rails: the
 * rails and the keys on them (transmit's rail_mask, rail_rkeys); its length.
 */
size_t bolt_rendezvous_rail_keys_write(const struct bolt_transmit *transmit, char *payload);
/* Target: makes response a write-back, striped if asked, when the reader offered one and this end can. */
void bolt_rendezvous_read_answer(struct bolt_connection *connection,
				 const struct bolt_wire_header *header, const char *payload,
				 struct bolt_transmit *response);
/* Reader on UC: a written-back read's data landed, wc names it; false if no read waits for it. */
bool bolt_rendezvous_read_landed(struct bolt_connection *connection, const struct ibv_wc *wc);
/* Receiver: the data is in place. */
void bolt_rendezvous_done(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* Target of a large fi_write: check the key, register the range, answer. */
void bolt_rendezvous_write_request(struct bolt_connection *connection,
				   const struct bolt_wire_header *header);
/*
 * A connection that fails (error, positive FI_E*) or closes (0) gives back
 * what its peer's transfers held; a failure completes their receives with it.
 */
void bolt_rendezvous_release(struct bolt_connection *connection, int error);
/*
 * Registers length bytes at address for one transfer on the port of the
 * connection's control rail (its link's); false if it cannot now.
 */
bool bolt_rendezvous_register(struct bolt_connection *connection, void *address, size_t length,
			      struct bolt_registration *registration);
/* registration's MR on the port of the connection's control rail, or NULL if it has none there. */
struct ibv_mr *bolt_rendezvous_link_mr(const struct bolt_connection *connection,
				       const struct bolt_registration *registration);
/*
 * The device MR of registration's buffer (length bytes at address) on the
 * port of the connection's data rail: the domain's own, or one registered
 * now on a stripe port. NULL if that port cannot register it now.
 */
struct ibv_mr *bolt_rendezvous_rail_mr(struct bolt_connection *connection, int rail,
				       struct bolt_registration *registration, void *address,
				       size_t length);
/*
 * Gives back a registration made for one transfer. It stays in the cache only
 * if covered: memory in an open MR stays valid until the MR closes, which
 * drops it; other memory may be freed as soon as the transfer completes.
 */
void bolt_rendezvous_unregister(struct bolt_domain *domain, struct bolt_registration *registration,
				bool covered);

/* Direct writes into regions the target granted (protocol/bolt_direct_write.c). */
/*
 * Target: a write to key was accepted. Unless the initiator holds a grant
 * already (header flags), tells it where key's whole region is.
 */
void bolt_direct_write_grant(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* Initiator: whether the peer granted the region transmit's key names. */
bool bolt_direct_write_granted_key(const struct bolt_transmit *transmit);
/* Initiator: the peer granted, or revoked, a region. */
void bolt_direct_write_granted(struct bolt_connection *connection, const struct bolt_wire_header *header);
void bolt_direct_write_revoked(struct bolt_connection *connection, const struct bolt_wire_header *header);
/*
 * Target: a region is closing; tells every peer, and drops the registration
 * once each has answered (or its connection went).
 */
void bolt_direct_write_revoke(struct bolt_mr *mr);
/* Target: a peer answered a revoke: none of its writes to that region is still to come. */
void bolt_direct_write_revoke_answered(struct bolt_connection *connection,
				       const struct bolt_wire_header *header);
/* The domain closes: the registrations of revokes still unanswered go. */
void bolt_direct_write_release_all(struct bolt_domain *domain);
/* Initiator: makes a write into a granted region a direct one; false if it cannot be. */
bool bolt_direct_write_prepare(struct bolt_transmit *transmit);
/* Initiator: the work request of transmit's direct write (wr_id and flags are the caller's). */
void bolt_direct_write_describe(const struct bolt_transmit *transmit, struct ibv_sge *sge,
				struct ibv_send_wr *wr);
/* Target: a direct write consumed a control receive. */
void bolt_direct_write_arrived(struct bolt_connection *connection, const struct ibv_wc *wc);
/* The connection failed or goes: its grants with it, and no answer to a revoke will come. */
void bolt_direct_write_forget_all(struct bolt_connection *connection);

/* Messages written whole into the peer's bounce buffers (protocol/bolt_bounce.c). */
/* Sets the link's buffers aside, where its port and the parameters allow. */
void bolt_bounce_create(struct bolt_link *link);
void bolt_bounce_destroy(struct bolt_link *link);
/* What the peer needs to write into the link's buffers (all 0: it has none). */
void bolt_bounce_describe_own(const struct bolt_link *link, struct bolt_peer_bounce *peer_bounce);
/* Why the peer's buffers as the handshake describes them cannot be used, or NULL. */
const char *bolt_bounce_check_peer(const struct bolt_peer_bounce *peer_bounce);
/* Initiator: whether transmit is a message to write whole. */
bool bolt_bounce_wanted(const struct bolt_transmit *transmit);
/*
 * Initiator: the work request that writes transmit whole, its header first
 * from record (wr_id and flags are the caller's); false if it cannot now.
 */
bool bolt_bounce_describe(struct bolt_transmit *transmit, const struct bolt_control_buffer *record,
			  struct ibv_sge sge[2], struct ibv_send_wr *wr);
/* Target: whether a write with immediate data on link filled a bounce buffer. */
bool bolt_bounce_immediate(const struct bolt_link *link, const struct ibv_wc *wc);
/* Target: the message in the buffer wc names, copied to header; why not, or NULL. */
const char *bolt_bounce_arrived(const struct bolt_link *link, const struct ibv_wc *wc,
				struct bolt_wire_header *header, const char **payload);

/* Receives granted ahead (protocol/bolt_receive_grant.c). */
/* Receiver: grants the receives at the head of the posted list that a peer's next messages take. */
void bolt_receive_grant_offer(struct bolt_endpoint *endpoint);
/*
 * Receiver: counts the peer's untagged message number (the header's tag),
 * of length bytes; the receive granted for it, taken from the grants, or
 * NULL. -FI_EIO, the connection failed, if messages before it were lost.
 */
int bolt_receive_grant_take(struct bolt_connection *connection, uint64_t number, uint64_t length,
			    struct bolt_receive **receive);
/* Receiver: the peer's message number, of length bytes, is in the receive granted for it. */
void bolt_receive_grant_landed(struct bolt_connection *connection, uint64_t number, uint64_t length);
/* Receiver: the same, for a write with immediate data that names a message. */
void bolt_receive_grant_written(struct bolt_connection *connection, const struct ibv_wc *wc);
bool bolt_receive_grant_immediate_names(const struct bolt_connection *connection, uint32_t immediate);
/* Sender: the immediate data of the write of our message number into its granted receive. */
uint32_t bolt_receive_grant_immediate(const struct bolt_connection *connection, uint64_t number);
/* Receiver: connection's message found no receive: peers holding receives for any source give them back. */
void bolt_receive_grant_revoke_others(struct bolt_connection *connection);
/* Receiver: the peer answered the revoke: the grants still open go back to the posted list. */
void bolt_receive_grant_revoke_answered(struct bolt_connection *connection);
/* Receiver: fi_cancel of a granted receive: 0 once it is asked back; -FI_ENOENT if none. */
int bolt_receive_grant_cancel(struct bolt_endpoint *endpoint, void *context);
/*
 * Receiver: the peer's messages were lost: the receive granted for the next
 * one ends with FI_EIO, as a receive matched to a lost message does.
 */
void bolt_receive_grant_lost(struct bolt_connection *connection);
/*
 * The connection fails (reuse: its granted receives go back to the posted
 * list) or closes (they are freed); the peer's grants are forgotten.
 */
void bolt_receive_grant_release(struct bolt_connection *connection, bool reuse);
/* Sender: the peer granted receives (the payload, as the header says), or asks its grants back. */
void bolt_receive_grant_arrived(struct bolt_connection *connection,
				const struct bolt_wire_header *header, const char *payload);
void bolt_receive_grant_revoked(struct bolt_connection *connection);
/* Sender: transmit, an untagged message about to go out, takes the receive granted for it, if any. */
void bolt_receive_grant_use(struct bolt_connection *connection, struct bolt_transmit *transmit);

/* Matching (protocol/bolt_match.c). */
void bolt_match_post(struct bolt_endpoint *endpoint, struct bolt_receive *receive);
/* A receive granted ahead comes back: it takes a waiting message, or its place in the posted list. */
void bolt_match_return(struct bolt_endpoint *endpoint, struct bolt_receive *receive);
/*
 * The first segment of a message from connection, payload_length bytes at
 * payload (all of it, from a bounce buffer): matched or kept as unexpected.
 */
void bolt_match_arrival(struct bolt_connection *connection, const struct bolt_wire_header *header,
			const char *payload, size_t payload_length);
/* The message inbound describes has all its data: deliver it. */
void bolt_match_complete_inbound(struct bolt_connection *connection, struct bolt_inbound *inbound);
/* Fills inbound for a message header and matches it to a posted receive, or makes it unexpected. */
int bolt_match_start(struct bolt_connection *connection, struct bolt_inbound *inbound,
		     const struct bolt_wire_header *header);
/* A later segment of the message connection->inbound is receiving, length bytes at payload. */
void bolt_match_segment(struct bolt_connection *connection, const struct bolt_wire_header *header,
			const char *payload, size_t length);
/* FI_ECANCELED for the posted receive with this context; -FI_ENOENT if none. */
int bolt_match_cancel(struct bolt_endpoint *endpoint, void *context);
/* Forgets an unexpected message (a rendezvous whose sender is gone). */
void bolt_match_drop_unexpected(struct bolt_endpoint *endpoint, struct bolt_unexpected *unexpected);
/* Fails the inbound message and directed receives of a failed connection. */
void bolt_match_connection_failed(struct bolt_connection *connection);
void bolt_match_free_all(struct bolt_endpoint *endpoint);

/* Memory regions (bolt_mr.c). */
extern struct fi_ops_mr bolt_mr_ops;
/*
 * The local bytes a peer's key, address and length name on this endpoint, if
 * the MR allows access; else a positive FI_E* code (FI_EACCES, FI_EINVAL).
 */
int bolt_mr_translate(struct bolt_endpoint *endpoint, uint64_t key, uint64_t address,
		      size_t length, uint64_t access, char **local);
/* The enabled MR a peer of endpoint names by key, or NULL. */
struct bolt_mr *bolt_mr_find(struct bolt_endpoint *endpoint, uint64_t key);
/* The address that names mr's first byte in RMA calls: its own, or 0 without FI_MR_VIRT_ADDR. */
uint64_t bolt_mr_base(const struct bolt_mr *mr);
/* fi_mr_map_raw: a raw key is the key itself. */
int bolt_mr_map_raw(const struct fi_mr_map_raw *map);

/* iovec helpers (bolt_iov.c). */
size_t bolt_iov_length(const struct iovec *iov, size_t count);
/* Copies length bytes of source to the iov at offset; returns bytes copied. */
size_t bolt_iov_copy_in(const struct iovec *iov, size_t count, size_t offset,
			const void *source, size_t length);
/* Copies length bytes of the iov at offset to destination; returns bytes copied. */
size_t bolt_iov_copy_out(const struct iovec *iov, size_t count, size_t offset,
			 void *destination, size_t length);

#endif /* BOLT_ENDPOINT_H */
