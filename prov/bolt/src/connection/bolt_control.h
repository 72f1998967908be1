/*
 * bolt_control.h: the domain's control buffers and the record each carries
 * as the wr_id of the control rail send or receive that uses it
 * (bolt_control.c). Part of the connection layer, included through
 * bolt_link.h.
 */
#ifndef BOLT_CONTROL_H
#define BOLT_CONTROL_H

#include "bolt_provider.h"
#include "connection/bolt_registration.h"

struct bolt_connection;
struct bolt_link;

/*
 * An RDMA write a control rail send posted, but for its keys, which are the
 * port's: a link that moves (RC) posts it again with the new port's.
 */
struct bolt_posted_write {
	bool present;
	enum ibv_wr_opcode opcode;
	uint32_t immediate;
	uint64_t address;
	uint32_t length;
	uint64_t remote_address;
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
	void *operation;                        /* a send's operation, the owner's to know */
	int send_slots;                         /* send queue entries its completion retires */
	int data_rail;                          /* a stripe's or its receive's rail; -1: control */
	bool posted;
	bool holds_registration;                /* a send that outlived its connection (bolt_link.c): */
	struct bolt_registration registration;  /* its RDMA write's buffer, released with it */
	bool covered;
	void *resent_payload;                   /* a message written whole, sent again: its copy,
						 * freed with the buffer (bolt_retransmit.c) */
	uint32_t message_length;                /* a SEND of its buffer (after a write or not): its
						 * bytes, which a moved link may post again; else 0 */
	struct bolt_posted_write write;         /* its RDMA write before any SEND, if it has one */
	uint32_t link_sequence;                 /* its transmission's number on the link, or (a plain
						 * write) the number of the next */
	bool replayed;                          /* came back flushed, had arrived: completed by the
						 * move as if it had succeeded (bolt_link_move.c) */
	struct bolt_control_buffer *resend_next; /* a moved link's resend list */
};

/* All under the domain lock. */
struct bolt_control_buffer *bolt_control_buffer_get(struct bolt_domain *domain);
void bolt_control_buffer_put(struct bolt_domain *domain, struct bolt_control_buffer *record);
char *bolt_control_buffer_data(struct bolt_domain *domain, const struct bolt_control_buffer *record);
struct bolt_control_buffer *bolt_control_buffer_of_work(struct bolt_work_completion *work);
/* Returns the buffers still posted for connection, whose queue pair is gone. */
void bolt_control_buffer_reclaim(struct bolt_domain *domain, struct bolt_connection *connection);

#endif /* BOLT_CONTROL_H */
