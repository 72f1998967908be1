/*
 * bolt_link.h: the control rail's transport, part of the connection layer
 * (bolt_connection.h is its front): links and their queue pairs, and the
 * bounce buffers a link sets aside for its peer. The control buffers their
 * sends and receives use are bolt_control.h's, the registrations of what a
 * transfer reads or writes by RDMA bolt_registration.h's. Nothing here knows
 * what a message means.
 */
#ifndef BOLT_LINK_H
#define BOLT_LINK_H

#include <sys/uio.h>

#include "bolt_provider.h"
#include "connection/bolt_control.h"
#include "connection/bolt_wire.h"

struct bolt_connection;
struct bolt_handshake;

/* Ports a link may be on: the domain's own, and each stripe port (bolt_link_port_index). */
#define BOLT_LINK_PORTS_MAX (1 + BOLT_MAX_STRIPE_PORTS)
/* Receives a link posts for its peer, which are also the peer's credits. */
#define BOLT_LINK_RECEIVE_DEPTH 32
/* Receives a link posts again together (bolt_link_receive.c): a quarter of its depth. */
#define BOLT_LINK_REPOST_BATCH 8

/* The buffers a link sets aside for its peer's messages written whole (bolt_bounce_buffer.c). */
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

/*
 * A link (bolt_link.c): the queue pair of the control rail between this
 * domain and one peer domain, shared by the connections of every pair of
 * their endpoints. Its receives and the peer's credits for them belong to the
 * link; each message names its connection's slot.
 */
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
	int32_t send_credits;           /* receives the peer has posted for us, as far as this end
					 * knows: below 0 after transmissions UC lost (the peer
					 * gives their receives back once it sees the gap) */
	uint16_t peer_credits_seen;     /* the peer's count of receives given back, last seen */
	uint32_t credits_given;         /* ours: reposted, and the peer's lost transmissions' */
	uint32_t credits_to_return;     /* given since our last header said the count */
	bool credits_urgent;            /* among them the peer's lost ones: say so at once */
	uint32_t transmissions;         /* ours that take a receive: the next link_sequence */
	uint32_t arrivals;              /* the peer's transmissions that arrived, */
	uint32_t lost;                  /* and those that did not (gaps in link_sequence) */
	struct bolt_bounce bounce;      /* ours, for the peer's messages */
	struct bolt_peer_bounce peer_bounce;
	uint32_t bounces_sent;          /* into the peer's buffers, which are used in turn */
	struct bolt_control_buffer *unposted[BOLT_LINK_REPOST_BATCH]; /* handled, to post again */
	uint32_t unposted_count;
	/* Handled messages' receives not posted again while their connection's owner
	 * keeps too much of the peer's data (bolt_connection_events.over_limit). */
	struct bolt_control_buffer *held[BOLT_LINK_RECEIVE_DEPTH];
	uint32_t held_count;
	int outstanding_sends;          /* posted on its queue pair, send completion pending */
	uint64_t retired_generation;    /* retired: the domain poll its buffers wait for */
	/* Moving to other ports (bolt_link_move.c): its connections go to successor. */
	struct bolt_link *successor;
	struct bolt_link *predecessor;  /* the link this one replaced, till its sends came back */
	bool move_asked;                /* we asked the peer to move */
	uint64_t move_refused_ns;       /* the peer had no port up for our move first then (0:
					 * never): asked again till the liveness time is out */
	uint64_t move_ask_again_ns;     /* and when to ask again */
	bool moved;                     /* its connections are on successor: retired once drained */
	bool awaiting_peer;             /* a successor: nothing goes till both ends are connected */
	struct bolt_control_buffer *resend_head, *resend_tail; /* RC: sends that came back
							       * flushed, for successor */
	uint32_t peer_arrivals;         /* moved (RC): of our transmissions on it, those the peer
					 * took before the move, as it said */
	struct bolt_link *prev, *next;  /* domain->links, or domain->retired_links */
};

/* Links (bolt_link.c). */
/* A link to peer_domain_id on port number port (0: the domain's own): queue pair in INIT, receives posted. */
int bolt_link_create(struct bolt_domain *domain, int port, uint64_t peer_domain_id,
		     struct bolt_link **link);
/* The domain's ports that may carry links: its own, then the stripe ports with control buffers. */
int bolt_link_port_count(const struct bolt_domain *domain);
/* The number of the link's port among them. */
int bolt_link_port_index(const struct bolt_link *link);
/* The link's half of a handshake: its port, GID, queue pair, PSN, receives and bounce buffer. */
void bolt_link_describe(const struct bolt_link *link, struct bolt_handshake *handshake);
/* The domain's port of that number (below bolt_link_port_count), carrying links or not. */
struct bolt_rail_port *bolt_link_port_of_index(struct bolt_domain *domain, int index);
/* The index-th of the domain's ports other than the one numbered skipped; NULL past the last. */
struct bolt_rail_port *bolt_link_other_port(struct bolt_domain *domain, int skipped, uint64_t index);
/* Whether the link's queue pairs sit on both domains' own ports. */
bool bolt_link_on_own_ports(const struct bolt_link *link);
/* RTR and RTS towards the peer's queue pair qpn, whose link has the bounce buffers peer_bounce describes. */
int bolt_link_connect(struct bolt_link *link, uint32_t qpn, uint32_t psn, const uint8_t *gid,
		      uint32_t receive_depth, const struct bolt_peer_bounce *peer_bounce);
/* A link to peer_domain_id more connections may join (established, else connecting), or NULL. */
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
/* Lets the link's connections send what they have queued, credits returned included. */
void bolt_link_progress(struct bolt_link *link);
/* Frees retired links whose buffers no completion can name any more. */
void bolt_link_reclaim(struct bolt_domain *domain);

/* Sending on the control rail (bolt_link_send.c). */
/* Room for slots more send queue entries on the link, and more credits than spare. */
bool bolt_link_can_send(const struct bolt_connection *connection, uint32_t spare, int slots);
/* Whether a segment of the application's data may take a receive now, leaving a batch for messages. */
bool bolt_link_can_write(const struct bolt_connection *connection);
/* Room for a message sent again: a send queue entry and a credit (no window). */
bool bolt_link_can_resend(const struct bolt_connection *connection);
/*
 * Room for a send a move posts again (bolt_link_move.c): its slots, and a
 * credit if it takes a receive; it passes the old link's sends, being one.
 */
bool bolt_link_can_send_again(const struct bolt_connection *connection, int slots, bool takes_receive);
/*
 * Whether a message of op takes the connection's next sequence number (kept
 * in order, and sent again if lost). Not credits; on RC not a question of a
 * key nor its answer either, which a moved link's flushed writes wait for
 * (bolt_link_move.c): they pass what waits to be sent again.
 */
bool bolt_link_numbered(const struct bolt_connection *connection, enum bolt_wire_op op);
/* bolt_link_can_send for a message of op: one without a number passes a move's flushed sends. */
bool bolt_link_can_send_op(const struct bolt_connection *connection, enum bolt_wire_op op, uint32_t spare,
			   int slots);
/* Fills the transport's part of a header: op, payload length, slot, credits, sequence. */
void bolt_link_frame(struct bolt_connection *connection, struct bolt_wire_header *header,
		     enum bolt_wire_op op, size_t payload_length);
/*
 * Posts wr on the connection's link, signaled, record carrying its completion
 * to handle, after the unsignaled write it ends (NULL if none). wr takes a
 * credit unless it is a plain RDMA write. False, the link failed, if refused.
 */
bool bolt_link_post(struct bolt_connection *connection, struct bolt_control_buffer *record,
		    struct ibv_send_wr *wr, struct ibv_send_wr *write,
		    void (*handle)(struct bolt_work_completion *, const struct ibv_wc *));
/* Posts record's own filled buffer, length bytes, as bolt_link_post does. */
bool bolt_link_post_buffer(struct bolt_connection *connection, struct bolt_control_buffer *record,
			   size_t length, struct ibv_send_wr *write,
			   void (*handle)(struct bolt_work_completion *, const struct ibv_wc *));
/*
 * A send of the link completed: its buffer returns, the link's accounting
 * too. The connection whose operation may go on, or NULL when nothing more
 * is to be done for it (the link failed, or the connection left it).
 */
struct bolt_connection *bolt_link_send_completed(struct bolt_control_buffer *record,
						 const struct ibv_wc *wc);
/* The completion of a send of no operation (a probe, credits, a message sent again). */
void bolt_link_bare_send_completed(struct bolt_work_completion *work, const struct ibv_wc *wc);
/* A header that only returns credits, once enough receives were posted again. */
void bolt_link_return_credits(struct bolt_connection *connection);
/*
 * A CREDIT header now: the credits and the acknowledgement, asking with
 * resend for what follows it; without_credit, also when this end has none
 * left (a probe: UC loses it harmlessly if the peer has no receive). False
 * if it cannot go now.
 */
bool bolt_link_send_acknowledgement(struct bolt_connection *connection, bool resend,
				    bool without_credit);
/* A new link's probe: a SEND of no bytes with nonce as immediate data. 0 or a negative error. */
int bolt_link_send_probe(struct bolt_connection *connection, uint32_t nonce);

/* Receiving on the control rail (bolt_link_receive.c). */
/* Posts the link's receives; 0 or a negative error code. */
int bolt_link_receive_post_initial(struct bolt_link *link);
/* Posts the receives links held back, once an owner fell under its limit (domain->release_held). */
void bolt_link_receive_release_held(struct bolt_domain *domain);

/* Bounce buffers (bolt_bounce_buffer.c). */
/* Sets the link's buffers aside, where its port and the parameters allow. */
void bolt_bounce_create(struct bolt_link *link);
void bolt_bounce_destroy(struct bolt_link *link);
/* What the peer needs to write into the link's buffers (all 0: it has none). */
void bolt_bounce_describe_own(const struct bolt_link *link, struct bolt_peer_bounce *peer_bounce);
/* Why the peer's buffers as the handshake describes them cannot be used, or NULL. */
const char *bolt_bounce_check_peer(const struct bolt_peer_bounce *peer_bounce);
/* The payload a buffer of the link's own takes, which its peer writes into; 0 if it has none. */
size_t bolt_bounce_own_payload(const struct bolt_link *link);
/* The payload a buffer of the peer's takes; 0 if it has none. */
size_t bolt_bounce_peer_payload(const struct bolt_link *link);
/*
 * The work request that writes a header (record's buffer) and length bytes
 * at address (lkey) whole into the peer's next buffer; wr_id and flags are
 * the caller's.
 */
void bolt_bounce_describe_write(struct bolt_link *link, const struct bolt_control_buffer *record,
				void *address, size_t length, uint32_t lkey,
				struct ibv_sge sge[2], struct ibv_send_wr *wr);
/* Target: whether a write with immediate data on link filled a bounce buffer. */
bool bolt_bounce_immediate(const struct bolt_link *link, const struct ibv_wc *wc);
/* Target: the message in the buffer wc names, copied to header; why not, or NULL. */
const char *bolt_bounce_arrived(const struct bolt_link *link, const struct ibv_wc *wc,
				struct bolt_wire_header *header, const char **payload);

#endif /* BOLT_LINK_H */
