/*
 * bolt_data_rail.h: data rails (bolt_data_rail.c), part of the connection
 * layer (bolt_connection.h is its front): a connection's queue pairs to its
 * peer beside the control rail, for large writes, their set-up with the
 * peer and the posts on them. Which are usable now is failover's
 * (bolt_data_rail_failover.h).
 */
#ifndef BOLT_DATA_RAIL_H
#define BOLT_DATA_RAIL_H

#include "connection/bolt_link.h"

struct bolt_connection;

/*
 * A data rail (bolt_data_rail.c): a queue pair to the peer of its own for
 * large writes, so that bulk data never queues in front of the control
 * rail's headers. Made on the first rendezvous, with the peer's answer.
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
	bool failed;                    /* its port went down, or a write on it failed: no
					 * stripes on it until the port is back (failover) */
	/*
	 * A failed RC rail is made again only once its sends are back (flushed,
	 * to go on the control rail): a queue pair destroyed before loses them.
	 * Until then, what waits: our own revival, or the peer's request.
	 */
	bool revive_when_drained;
	bool request_when_drained;
	struct bolt_wire_header drained_request;
	char drained_request_payload[sizeof(union ibv_gid)];
};

/* Asks the peer for the data rails not asked for yet, where queue pairs can be spared. */
void bolt_data_rail_request(struct bolt_connection *connection);
/* The link turned out to be on other ports: rails asked for meanwhile are asked again beside it. */
void bolt_data_rail_link_moved(struct bolt_connection *connection);
/* A message of the data rails' set-up (RAIL_*) from the peer. */
void bolt_data_rail_message(struct bolt_connection *connection, const struct bolt_wire_header *header,
			    const char *payload);
/* Answerer: stripe rails whose probe is late are refused; the asker tries our next port. */
void bolt_data_rail_check_probes(struct bolt_connection *connection, uint64_t now_ns);
/* Sets up domain->rail_probe, the wr_id of every probe and its receive. */
void bolt_data_rail_domain_init(struct bolt_domain *domain);
/* Whether the connection has a ready rail on another port than the domain's: another cable. */
bool bolt_data_rail_striping(const struct bolt_connection *connection);
/* The ready rails (a mask) with room for one more stripe each. */
uint32_t bolt_data_rail_ready(const struct bolt_connection *connection, bool with_room);
/*
 * Posts a stripe as RDMA write with immediate data on rail (on UC, cut into
 * segments that are written again when lost); 0 or an errno.
 */
int bolt_data_rail_post_write(struct bolt_connection *connection, int rail,
			      struct bolt_control_buffer *record, const struct ibv_sge *sge,
			      uint64_t remote_address, uint32_t rkey, uint32_t immediate);
/* Posts wr for record on rail as it is; 0 or an errno. */
int bolt_data_rail_post(struct bolt_connection *connection, int rail, struct bolt_control_buffer *record,
			struct ibv_send_wr *wr);
/* Posts the receive a stripe's immediate data consumes; 0 or an errno. */
int bolt_data_rail_post_receive(struct bolt_connection *connection, int rail,
				struct bolt_control_buffer *record);
void bolt_data_rail_destroy_all(struct bolt_connection *connection);
/*
 * Within the layer: a rail's queue pair destroyed (state unchanged), a
 * RAIL_* message about rail index (status in cq_data), and why a rail
 * message cannot be used (NULL: it can).
 */
void bolt_data_rail_destroy(struct bolt_connection *connection, struct bolt_data_rail *rail);
void bolt_data_rail_send(struct bolt_connection *connection, enum bolt_wire_op op, uint64_t index,
			 uint32_t status);
const char *bolt_data_rail_check(const struct bolt_wire_header *header, bool carries_qp);

#endif /* BOLT_DATA_RAIL_H */
