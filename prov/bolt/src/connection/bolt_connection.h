/*
 * bolt_connection.h: the connection layer (layer 4). A connection is the
 * transport between this endpoint and one peer endpoint: its side channel
 * and handshake, its slot on a shared link (bolt_link.h), its data rails,
 * sequence numbers and loss detection. It knows nothing of operations: its
 * owner, the protocol layer, sets the events table through which the layer
 * tells what happened (a connection failed or became ready, a message or a
 * write arrived, room to send came back). Files of this layer include only
 * this header and those below it, never a protocol's.
 */
#ifndef BOLT_CONNECTION_H
#define BOLT_CONNECTION_H

#include <poll.h>
#include <uthash.h>

#include "connection/bolt_handshake.h"
#include "connection/bolt_link.h"
#include "connection/bolt_retransmit.h"
#include "connection/bolt_data_rail.h"
#include "connection/bolt_data_rail_failover.h"
#include "connection/bolt_rewrite.h"
#include "connection/bolt_side_channel.h"

enum bolt_connection_state {
	BOLT_CONNECTION_CONNECTING,     /* our hello sent, waiting for the reply */
	BOLT_CONNECTION_WAITING_READY,  /* replied to the peer's hello, waiting for ready */
	BOLT_CONNECTION_WAITING_CONNECTED,      /* a new link: ready sent, waiting for the peer's
						 * queue pair to connect to ours */
	BOLT_CONNECTION_WAITING_LINK,   /* the peer's hello waits for our link to its domain */
	BOLT_CONNECTION_WAITING_PROBED, /* initiator: a new link's probe sent, waiting for word */
	BOLT_CONNECTION_WAITING_PROBE,  /* answerer: waiting for the probe, then the word of it */
	BOLT_CONNECTION_ESTABLISHED,
	BOLT_CONNECTION_FAILED,
};

/*
 * What the connection layer tells its owner, which keeps its own state per
 * connection in connection->owner. Every event is called under the domain
 * lock; an event may fail the connection it is told about.
 */
struct bolt_connection_events {
	/* A connection was made (the owner's state to set up); 0 or a negative error. */
	int (*created)(struct bolt_connection *connection);
	/* It failed: what waits on it ends with connection->error (a positive FI_E*). */
	void (*failed)(struct bolt_connection *connection);
	/* It goes: the owner's state is released, nothing reported. */
	void (*destroyed)(struct bolt_connection *connection);
	/*
	 * Its link turned out to be on other ports than the domains' own: what
	 * was queued for the domain's own port adapts (can_send follows).
	 */
	void (*link_moved)(struct bolt_connection *connection);
	/* Room to send came back (credits, queue entries): send what waits. */
	void (*can_send)(struct bolt_connection *connection);
	/* Whether anything waits on the peer: operations, replies, data coming in. */
	bool (*busy)(const struct bolt_connection *connection);
	/* Whether the peer may still write into the owner's memory (receives it was given). */
	bool (*exposes_memory)(const struct bolt_connection *connection);
	/*
	 * Whether the owner still names a failed connection (work, memory the
	 * peer may write, data of it not yet taken): one replaced by a new
	 * connection to its peer is freed once this says no and none holds it.
	 */
	bool (*in_use)(const struct bolt_connection *connection);
	/* Whether the owner keeps too much of the peer's data: its receives are held back. */
	bool (*over_limit)(const struct bolt_connection *connection);
	/* A message, its header checked by the transport; payload_length bytes at payload. */
	void (*message)(struct bolt_connection *connection, const struct bolt_wire_header *header,
			const char *payload, size_t payload_length);
	/* A write with immediate data landed on the control rail (no message). */
	void (*write_landed)(struct bolt_connection *connection, const struct ibv_wc *wc);
	/*
	 * The keys on the control rail's port now for the RDMA write record
	 * holds (UC, bolt_rewrite.c): 0, 1 while they are asked for, or a
	 * negative error code.
	 */
	int (*write_keys)(struct bolt_connection *connection, const struct bolt_control_buffer *record,
			  uint32_t *lkey, uint32_t *rkey);
	/* Writes (or a message a protocol found damaged) were lost: the connection fails next. */
	void (*lost)(struct bolt_connection *connection);
	/* Sends a message of the transport's own (data rail set-up), header filled but for the frame. */
	void (*send)(struct bolt_connection *connection, const struct bolt_wire_header *header,
		     const void *payload, size_t payload_length);
	/* A send still posted outlives its connection: record keeps what its operation lent it. */
	void (*send_orphaned)(struct bolt_control_buffer *record);
};

/* An endpoint's connections: its address, side channel listener, and peers. */
struct bolt_connection_manager {
	struct bolt_domain *domain;
	const struct bolt_connection_events *events;
	struct bolt_address address;            /* this end's, as peers reach it */
	struct bolt_side_channel_listener listener;
	struct bolt_connection *connections;    /* hash by peer address */
	struct bolt_connection *last_got;       /* of connections, the last bolt_connection_get found */
	struct bolt_accepted *accepted;
	struct bolt_connection *retired;        /* failed, replaced by a new one to their peer:
						 * freed once nothing names them */
	bool handshakes_pending;                /* side channels need every progress call */
	uint64_t side_channels_watched_ns;      /* else they are looked at this often
						 * (coarse clock, bolt_platform.h) */
	struct pollfd *side_channel_polls;      /* one poll looks at them all */
	size_t side_channel_poll_capacity;
	uint64_t accept_paused_until_ns;        /* an accept failed: none until then */
	uint64_t accept_backoff_ns;             /* the pause after the last failure */
	uint64_t accept_warned_ns;              /* that failure was last said then */
	uint64_t accept_failures;
	uint64_t refusals;                      /* side channels refused, */
	uint64_t refusal_warnings;              /* in so many warnings, */
	uint64_t refusal_warned_ns;             /* the last one then, */
	uint64_t refusals_unsaid;               /* and so many since went unsaid */
	struct bolt_connection_manager *prev, *next;    /* domain->connection_managers */
};

struct bolt_connection {
	struct bolt_connection_manager *manager;
	void *owner;                    /* the owner's state for this peer (events.created) */
	struct bolt_address peer;
	UT_hash_handle hh;              /* manager->connections, by peer address */
	enum bolt_connection_state state;
	int error;                      /* FAILED: the positive FI_E* operations get */
	bool loopback;                  /* the endpoint's own address: no side channel */
	uint64_t peer_domain_id;        /* WAITING_LINK: the domain of the peer that said hello */
	int attempt;                    /* initiator: which pair of ports a new link tries */
	int peer_port_count;            /* the peer's ports that may carry links */
	uint32_t probe_nonce;           /* a new link's probe: sent, or expected */
	uint64_t probe_deadline_ns;     /* answerer: the probe is late from then on; 0: not sent */
	/* The side channel, NULL once closed: freed then, since its buffers are most of the
	 * connection's memory and a failed connection stays while the protocols name it. */
	struct bolt_side_channel_stream *stream;
	struct bolt_link *link;         /* the control rail's queue pair, maybe shared; NULL: none */
	uint8_t slot;                   /* this connection's on the link, the same at both ends */
	uint8_t slot_nonce;
	struct bolt_data_rail data_rails[BOLT_MAX_CONNECTION_RAILS];
	uint32_t send_sequence;
	uint32_t receive_sequence;
	uint32_t stripes_sent;          /* data rail stripes and direct writes posted to the peer, */
	uint32_t stripes_received;      /* and arrived from it */
	struct bolt_retransmit retransmit;
	struct bolt_rewrite rewrite;
	unsigned int holds;             /* bolt_connection_hold without its release */
	uint64_t failed_generation;     /* FAILED: the domain poll its buffers wait for */
	bool reclaim_pending;           /* FAILED: buffers still posted on the lost QP */
	uint64_t started_ns;            /* when connecting began, for its timeout */
	uint64_t crossing_deadline_ns;  /* CONNECTING, our side channel dropped: the peer's hello
					 * is late from then on; 0: not waiting for one */
};

/*
 * Accepted side channels whose peer is not believed yet: waiting for its
 * hello, then for the sender the hello claims to confirm it (bolt_confirm.c).
 * Nothing else is allocated for the peer until then.
 */
struct bolt_accepted {
	struct bolt_side_channel_stream stream;
	uint64_t deadline_ns;           /* its hello, or its confirmation, is late from then on */
	struct bolt_side_channel_stream *confirm;       /* asking the claimed sender; NULL: no hello yet */
	struct bolt_handshake hello;    /* confirm: the hello it asks about */
	struct bolt_accepted *prev, *next;
};

/* Connections (bolt_connection.c). */
/*
 * Whether a hello's claimed sender may come from the side channel's peer
 * (the accepted socket's address): the same IP (the port is the peer's
 * listener's, not the one it connects from), or, from a loopback peer, an
 * address of this host.
 */
bool bolt_connection_sender_matches_peer(const struct bolt_address *sender,
					 const struct sockaddr *peer, socklen_t peer_length);
/* Starts an endpoint's connections: they tell events; the listener and address are set already. */
void bolt_connection_manager_start(struct bolt_connection_manager *manager, struct bolt_domain *domain,
				   const struct bolt_connection_events *events);
/*
 * Keep connection from being freed while the caller names it (a collective
 * group its members): a failed connection replaced by a new one to its peer
 * is freed only once no one holds it. Every hold has its release.
 */
void bolt_connection_hold(struct bolt_connection *connection);
void bolt_connection_release(struct bolt_connection *connection);
/* The connection to peer, started if there is none. NULL only when out of memory. */
struct bolt_connection *bolt_connection_get(struct bolt_connection_manager *manager,
					    const struct bolt_address *peer);
/* Accepts side channels, advances handshakes, notices dead peers. */
void bolt_connection_progress_all(struct bolt_connection_manager *manager);
/* CLOCK_MONOTONIC in nanoseconds, the clock of connection timeouts. */
uint64_t bolt_connection_now_ns(void);
/* Fails the connection: every operation on it completes with error. */
void bolt_connection_fail(struct bolt_connection *connection, int error, const char *why);
/* Closing an endpoint: every connection, its queue pair and buffers, and accepted side channels. */
void bolt_connection_destroy_all(struct bolt_connection_manager *manager);
/* The number of the port the connection's control rail is on: its link's, the domain's own until it has one. */
int bolt_connection_port_index(const struct bolt_connection *connection);
/* Whether the connection's queue pair may lose messages (UC): then every write carries immediate data. */
bool bolt_connection_unreliable(const struct bolt_connection *connection);
/* Whether it may write with immediate data of its own: on UC, or as its RC link's first (slot 0). */
bool bolt_connection_may_write_immediate(const struct bolt_connection *connection);

/*
 * A side channel to the listener at peer, allocated into *stream, with the
 * manager's job key and liveness; NULL on error. 0 or a negative error code.
 */
int bolt_connection_manager_connect(struct bolt_connection_manager *manager,
				    const struct bolt_address *peer,
				    struct bolt_side_channel_stream **stream);

/* Confirming a hello's claimed sender (bolt_confirm.c). */
/* Asks the listener at hello's sender whether it said hello on accepted's side channel. */
int bolt_confirm_start(struct bolt_connection_manager *manager, struct bolt_accepted *accepted,
		       const struct bolt_handshake *hello);
/* 0: the sender said yes; -FI_EAGAIN: no answer yet; -FI_ENOENT: it said no; else it failed. */
int bolt_confirm_progress(struct bolt_accepted *accepted);
/* Closes the side channel that asks, if any. */
void bolt_confirm_end(struct bolt_accepted *accepted);
/* A CHECK, first on a side channel we accepted: whether we said that hello, answered on stream. */
void bolt_confirm_answer(struct bolt_connection_manager *manager, struct bolt_side_channel_stream *stream,
			 const void *body, uint32_t length);

/* Loss (bolt_loss.c). */
/* Fails a connection that lost what cannot be sent again; its link takes no new connection. */
void bolt_loss_fail(struct bolt_connection *connection, const char *why);

#endif /* BOLT_CONNECTION_H */
