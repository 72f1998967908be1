/*
 * bolt_rewrite.h: RDMA writes of application data that UC lost, written
 * again (bolt_rewrite.c): the state one connection keeps for its writes to
 * the peer, and for the peer's to it.
 */
#ifndef BOLT_REWRITE_H
#define BOLT_REWRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "bolt.h"
#include "connection/bolt_round_trip.h"

struct bolt_connection;
struct bolt_control_buffer;
struct bolt_rail_port;
struct bolt_wire_header;
struct ibv_sge;
struct ibv_wc;

/* Segments not yet acknowledged, per connection: what one acknowledgement's bitmap covers. */
#define BOLT_REWRITE_WINDOW 64
/* Receives a UC data rail keeps posted for the peer's segments, and segments in flight on one. */
#define BOLT_REWRITE_RAIL_RECEIVES 16
/* The queue pairs a connection writes on: the control rail (first), then each data rail. */
#define BOLT_REWRITE_QUEUE_PAIRS (BOLT_MAX_CONNECTION_RAILS + 1)

/* One write of the protocol's, cut into segments; its record completes once all arrived. */
struct bolt_rewrite_write {
	struct bolt_control_buffer *record;     /* the protocol's, with its handle */
	int rail;                               /* the data rail it was for; -1: the control rail */
	uint64_t local_address;
	uint32_t lkey;
	uint64_t remote_address;
	uint32_t rkey;
	const struct bolt_rail_port *port;      /* the one lkey and rkey are for */
	uint32_t length;
	uint32_t posted;                        /* bytes cut into segments so far, */
	bool cut;                               /* and all (a write of none: one empty segment) */
	uint32_t immediate;                     /* the protocol's, sent in WRITE_LANDED */
	bool with_immediate;
	uint32_t unacknowledged;                /* its segments posted, not acknowledged, and parts */
	struct bolt_rewrite_write *parent;      /* a part: a lost segment's bytes of parent, cut again */
	struct bolt_rewrite_write *prev, *next;
};

struct bolt_rewrite_segment {
	struct bolt_rewrite_write *write;       /* NULL: acknowledged, or never used */
	uint32_t offset, length;                /* within its write */
	int queue_pair;                         /* 0: control rail, 1 + data rail index */
	bool in_flight;                         /* counted in its queue pair's in_flight */
	bool written_again;                     /* no round-trip sample from it (Karn) */
	uint64_t order;                         /* the connection's segment transmissions before its last */
	uint64_t sent_ns;                       /* its last transmission */
};

struct bolt_rewrite {
	/* Writing: */
	struct bolt_rewrite_write *writes;      /* in the order they came; the first posts first */
	struct bolt_rewrite_segment *segments;  /* by sequence modulo the window; NULL: none yet */
	uint32_t next_sequence;                 /* the next new segment's */
	uint32_t oldest;                        /* every segment before it is acknowledged */
	uint64_t order;                         /* segment transmissions so far */
	uint64_t acknowledged_order[BOLT_REWRITE_QUEUE_PAIRS];  /* per queue pair, the latest
							 * transmission known to have arrived, + 1 */
	uint32_t in_flight[BOLT_REWRITE_QUEUE_PAIRS];   /* segments unacknowledged, per queue pair */
	uint64_t progress_ns;                   /* an acknowledgement last moved oldest, or the first went */
	struct bolt_round_trip round_trip;      /* from segments' acknowledgements, */
	uint64_t timeout_ns;                    /* and the timeout from it backed off while silent */
	uint32_t segment_size;                  /* of the next new segment (bolt_rewrite_best_size) */
	double observed_segments;               /* acknowledged or lost lately (decaying counts), */
	double observed_kibibytes;              /* their size, */
	double observed_losses;                 /* and how many of them were lost */
	uint32_t observed_since_choice;         /* segments since the size was chosen */
	uint64_t rewrites, timeouts;            /* what it took, for the log */
	/* Written to: */
	uint32_t received;                      /* every segment before it arrived (wire numbers) */
	uint64_t received_after;                /* bit k: received + 1 + k arrived */
	uint32_t gap_reported;                  /* the received our last word on a gap said */
	bool acknowledgement_owed;              /* arrivals our last CREDIT did not say */
	uint32_t unacknowledged_arrivals;       /* since then */
	uint64_t acknowledgement_due_ns;        /* owed from then on; 0: none owed */
	uint32_t rail_receives[BOLT_MAX_CONNECTION_RAILS];      /* posted for segments, per rail */
};

/*
 * Whether connection's writes of application data are cut into segments
 * and written again when lost: UC, where nothing else would.
 */
bool bolt_rewrite_applies(const struct bolt_connection *connection);
/*
 * Takes over the write of sge's bytes to remote_address / rkey (with
 * immediate data *immediate, or none) that record's handle completes: on
 * rail (-1: the control rail). The handle runs once every segment has
 * arrived. 0, or a negative error code (nothing taken).
 */
int bolt_rewrite_start(struct bolt_connection *connection, int rail, struct bolt_control_buffer *record,
		       const struct ibv_sge *sge, uint64_t remote_address, uint32_t rkey,
		       const uint32_t *immediate);
/* Whether writes to the peer are still in progress (not all their segments arrived). */
bool bolt_rewrite_pending(const struct bolt_connection *connection);
/* Posts what the window, credits and send queues allow. */
void bolt_rewrite_post(struct bolt_connection *connection);
/* A segment arrived (its immediate data): true if immediate is a segment's. */
bool bolt_rewrite_arrived(struct bolt_connection *connection, const struct ibv_wc *wc);
/* A UC data rail keeps receives posted for the peer's segments. */
void bolt_rewrite_rail_receives(struct bolt_connection *connection, int rail);
/* What a CREDIT going out says of the segments that arrived. */
void bolt_rewrite_acknowledging(struct bolt_connection *connection, struct bolt_wire_header *header);
/* What a CREDIT that came says of our segments. */
void bolt_rewrite_acknowledged(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* WRITE_LANDED: the write is whole, its immediate data is taken now. */
void bolt_rewrite_landed(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* Whether progress must read the clock for connection's writes: segments out, or a word owed. */
bool bolt_rewrite_timing(const struct bolt_connection *connection);
/* Timeouts, acknowledgements owed, the peer's silence; now_ns 0: not looked at. */
void bolt_rewrite_progress(struct bolt_connection *connection, uint64_t now_ns);
/* Forgets every write (the connection failed or goes); their records are the reclaim's. */
void bolt_rewrite_destroy(struct bolt_connection *connection);

#endif /* BOLT_REWRITE_H */
