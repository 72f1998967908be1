/*
 * bolt_rdma.h: the entry points of the protocols that move data by RDMA
 * write, part of the protocol layer (bolt_protocol.h): rendezvous, direct
 * writes into granted regions, messages written whole into bounce buffers,
 * and receives granted ahead.
 */
#ifndef BOLT_RDMA_H
#define BOLT_RDMA_H

#include "protocol/bolt_protocol.h"

/*
 * Target: a closed region's registration, kept until every peer told of the
 * close has answered (bolt_direct_write.c).
 */
struct bolt_revoke {
	uint64_t id;
	struct bolt_mr_cache_entry *grants[BOLT_LINK_PORTS_MAX];        /* the region's, by port */
	struct bolt_connection **owed;  /* connections whose answer is still to come */
	int owed_count;
	uint64_t key;                   /* the region's libfabric key, for the log */
	uint64_t deadline_ns;           /* a peer still owing then is failed (FI_BOLT_LIVENESS_TIMEOUT) */
	bool telling;                   /* the peers are being told: kept even with none owing */
	struct bolt_revoke *prev, *next;        /* domain->revokes */
};

struct bolt_region_grant {
	uint64_t key;                   /* the MR's libfabric key */
	uint64_t base;                  /* the address that names the MR's first byte in RMA calls */
	uint64_t length;
	uint64_t target_address;        /* that byte in the peer's memory */
	uint32_t rkey;
	const struct bolt_rail_port *port;      /* ours the rkey is for, as a receive grant's */
	bool quiet;                     /* the peer needs no word of writes without remote CQ data */
	UT_hash_handle hh;              /* peer->grants, by key */
};

/*
 * Receives granted ahead (bolt_receive_grant.c). The receiver's
 * record of one: the peer's untagged message it is for, and its buffer's
 * registration while the peer may write it.
 */
struct bolt_granted_receive {
	uint64_t number;
	struct bolt_receive *receive;
	struct bolt_registration registration;
	struct bolt_granted_receive *prev, *next;       /* peer->granted, by number */
};

/* Rendezvous (bolt_rendezvous.c). */
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
/* The WR of a WRITE phase's one write: with immediate data naming the transfer (wr_id, flags: the caller's). */
void bolt_rendezvous_describe_write(const struct bolt_transmit *transmit, struct ibv_sge *sge,
				    struct ibv_send_wr *wr);
/* Sender: posts the stripes of a write phase across transmit->rail_mask; false when it must wait. */
bool bolt_transmit_stripes(struct bolt_connection *connection, struct bolt_transmit *transmit);
/* Sender: a stripe's completion; the protocol's handler of every send it posts. */
void bolt_transmit_send_completed(struct bolt_work_completion *work, const struct ibv_wc *wc);

/* Failover (bolt_failover.c). */
/* Posts the stripes of failed rails on the control rail; false while the link has no room. */
bool bolt_failover_progress(struct bolt_connection *connection);
/*
 * A stripe posted on a data rail came back with an error: the rail fails and
 * the stripe goes on the control rail, once (true). False if it is no stripe
 * of a live connection's, for the usual handling.
 */
bool bolt_failover_stripe_failed(struct bolt_control_buffer *record, const struct ibv_wc *wc);
/*
 * Sender: the keys of transmit's buffer and its target's on the control
 * rail's port, for a write there; 1 while that port is down or the
 * target's key is asked for (the control rail moved since the answer),
 * -FI_ENOMEM if ours cannot be registered there.
 */
int bolt_failover_control_keys(struct bolt_connection *connection, struct bolt_transmit *transmit,
			       uint32_t *lkey, uint32_t *rkey);
/*
 * events->write_keys: the same for the operation of a write in segments
 * (record's): a rendezvous transfer's, or one into a granted receive or
 * region; -FI_EOPNOTSUPP for any other.
 */
int bolt_failover_write_keys(struct bolt_connection *connection, const struct bolt_control_buffer *record,
			     uint32_t *lkey, uint32_t *rkey);
/*
 * The port of ours the key header gives is for: the control rail's, if the
 * peer sent it from the port at its far end (header->offset); NULL, if the
 * control rail moved since.
 */
const struct bolt_rail_port *bolt_rendezvous_key_port(const struct bolt_connection *connection,
						      const struct bolt_wire_header *header);
/* Sender: the target's key for stripes moved to the control rail's new port (STRIPE_KEY). */
void bolt_failover_key_arrived(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* Target: registers the transfer STRIPE_KEY_ASK names on the control rail's port, and answers. */
void bolt_rendezvous_key_asked(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* Receiver, RC: the stripe STRIPE_MOVED names was written ahead of it on the control rail. */
void bolt_rendezvous_stripe_moved(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* Receiver: a stripe's immediate data arrived on a data rail. */
void bolt_rendezvous_stripe_arrived(struct bolt_work_completion *work, const struct ibv_wc *wc);
/* A stripe that came on UC's control rail, moved there: which rail it was for is not said. */
#define BOLT_STRIPE_RAIL_UNKNOWN (-1)
/*
 * Receiver: a stripe landed on a data rail, moved from it (STRIPE_MOVED), or
 * on UC's control rail (BOLT_STRIPE_RAIL_UNKNOWN); wc names its transfer.
 * False if none waits for it.
 */
bool bolt_rendezvous_stripe_landed(struct bolt_connection *connection, const struct ibv_wc *wc,
				   int rail, bool moved);
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
/*
 * Reader: a written-back read's data, or a stripe of it, landed (rail and
 * moved as for bolt_rendezvous_stripe_landed); wc names it. False if no
 * read waits for it.
 */
bool bolt_rendezvous_read_landed(struct bolt_connection *connection, const struct ibv_wc *wc,
				 int rail, bool moved);
/* The receiver's answer asks for segments instead of a write. */
#define BOLT_RENDEZVOUS_USE_SEGMENTS 1
/*
 * Receiver: tells the sender where to write, as op (RENDEZVOUS_READY, or
 * TAG_GRANT for message tag): record's registration of length bytes at
 * address and the data rails it posts stripe receives on; or, unregistered
 * (no record), status: segments, or an FI_E* error that ends the request.
 */
void bolt_rendezvous_say_where(struct bolt_connection *connection, enum bolt_wire_op op,
			       uint64_t request_id, uint64_t tag, struct bolt_inbound *record,
			       void *address, size_t length, uint32_t status);
/*
 * Sender: transmit's answer (or grant) came: write where it says, on the
 * data rails it names (rails, their keys in payload), or go in segments.
 */
void bolt_rendezvous_take_answer(struct bolt_connection *connection, struct bolt_transmit *transmit,
				 const struct bolt_wire_header *header, uint32_t rails,
				 const char *payload);
/* Receiver: the data is in place. */
void bolt_rendezvous_done(struct bolt_connection *connection, const struct bolt_wire_header *header);
/* Every byte of record's transfer is in place: deliver the message or count the write. */
void bolt_rendezvous_finish(struct bolt_connection *connection, struct bolt_inbound *record);
/* Target of a large fi_write: check the key, register the range, answer. */
void bolt_rendezvous_write_request(struct bolt_connection *connection,
				   const struct bolt_wire_header *header);
/*
 * A connection that fails (error, positive FI_E*) or closes (0) gives back
 * what its peer's transfers held; a failure completes their receives with it.
 */
void bolt_rendezvous_release(struct bolt_connection *connection, int error);

/* Direct writes into regions the target granted (bolt_direct_write.c). */
/*
 * Target: a write to key was accepted. Unless the initiator holds a grant
 * already (header flags), tells it where key's whole region is.
 */
void bolt_direct_write_grant(struct bolt_connection *connection, const struct bolt_wire_header *header);
/*
 * Target: the region of key, granted, registered on the control rail's port
 * now, for a write that crossed a move of it (STRIPE_KEY_ASK); NULL if it
 * cannot be (closed, or no registration).
 */
struct ibv_mr *bolt_direct_write_key_here(struct bolt_connection *connection, uint64_t key);
/*
 * Receiver: the receive granted for the peer's message number, registered on
 * the control rail's port now, as above; NULL if none is granted for it.
 */
struct ibv_mr *bolt_receive_grant_key_here(struct bolt_connection *connection, uint64_t number);
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
/*
 * Target, at each progress: a peer that has not answered a revoke within
 * FI_BOLT_LIVENESS_TIMEOUT fails, and the registration goes with its answer.
 */
void bolt_direct_write_check_revokes(struct bolt_domain *domain);
/* Target: whether the connection's peer owes an answer to a revoke (it may still write). */
bool bolt_direct_write_owes_answer(const struct bolt_connection *connection);
/* Initiator: makes a write into a granted region a direct one; false if it cannot be. */
bool bolt_direct_write_prepare(struct bolt_transmit *transmit);
/* Initiator: the work request of transmit's direct write (wr_id and flags are the caller's). */
void bolt_direct_write_describe(const struct bolt_transmit *transmit, struct ibv_sge *sge,
				struct ibv_send_wr *wr);
/* Target: a direct write consumed a control receive. */
void bolt_direct_write_arrived(struct bolt_connection *connection, const struct ibv_wc *wc);
/* The connection failed or goes: its grants with it, and no answer to a revoke will come. */
void bolt_direct_write_forget_all(struct bolt_connection *connection);

/* Messages written whole into the peer's bounce buffers (bolt_bounce.c). */
/*
 * Whether a message of length bytes goes whole into a bounce buffer of
 * payload bytes (0: none): longer than a segment, from FI_BOLT_BOUNCE_THRESHOLD.
 */
bool bolt_bounce_takes(const struct bolt_domain *domain, size_t length, size_t payload);
/* Initiator: whether transmit is a message to write whole. */
bool bolt_bounce_wanted(const struct bolt_transmit *transmit);
/*
 * Initiator: the work request that writes transmit whole, its header first
 * from record (wr_id and flags are the caller's); false if it cannot now.
 */
bool bolt_bounce_describe(struct bolt_transmit *transmit, const struct bolt_control_buffer *record,
			  struct ibv_sge sge[2], struct ibv_send_wr *wr);

/* Receives granted ahead (bolt_receive_grant.c). */
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
/*
 * Receiver, at each progress: a peer asked to give its grants back that has
 * not answered within FI_BOLT_LIVENESS_TIMEOUT fails, and its grants come back.
 */
void bolt_receive_grant_check_revokes(struct bolt_endpoint *endpoint);
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

#endif /* BOLT_RDMA_H */
