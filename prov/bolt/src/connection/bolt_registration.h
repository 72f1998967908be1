/*
 * bolt_registration.h: device registrations of the buffers one transfer
 * reads or writes by RDMA (bolt_registration.c). Part of the connection
 * layer, included through bolt_link.h.
 */
#ifndef BOLT_REGISTRATION_H
#define BOLT_REGISTRATION_H

#include "bolt_provider.h"

struct bolt_connection;

/*
 * A buffer's device registrations for one transfer: on the domain's port,
 * and on each stripe port its stripes cross, made when a stripe needs one.
 * Exposed: the peer writes into the buffer (or, peer_reads, reads from it),
 * so each is a registration of exactly its bytes with that access only,
 * gone at release (bolt_mr_cache_expose); otherwise only this end touches
 * it, and a shared cached registration with no remote access does.
 */
struct bolt_registration {
	struct bolt_mr_cache_entry *primary;
	struct bolt_mr_cache_entry *stripe[BOLT_MAX_STRIPE_PORTS];
	bool exposed;
	bool peer_reads;        /* exposed for the peer to read from, not to write into */
};

/*
 * Registers length bytes at address on the port of the connection's control
 * rail, for this end to read from (the source of its writes); false if not now.
 */
bool bolt_registration_acquire(struct bolt_connection *connection, void *address, size_t length,
			       struct bolt_registration *registration);
/* The same for a buffer the peer is to write into: exposed, exactly those bytes, write only. */
bool bolt_registration_expose(struct bolt_connection *connection, void *address, size_t length,
			      struct bolt_registration *registration);
/* The same for a buffer the peer is to read from by RDMA: exposed, exactly those bytes, read only. */
bool bolt_registration_expose_readable(struct bolt_connection *connection, void *address, size_t length,
				       struct bolt_registration *registration);
/* registration's MR on the port of the connection's control rail, or NULL if it has none there. */
struct ibv_mr *bolt_registration_link_mr(const struct bolt_connection *connection,
					 const struct bolt_registration *registration);
/*
 * An exposed registration's MR on the port of the connection's control rail,
 * registered there now for the bytes it holds on another port (the control
 * rail moved since); NULL if it cannot be.
 */
struct ibv_mr *bolt_registration_follow_link(struct bolt_connection *connection,
					     struct bolt_registration *registration);
/* The MR of registration's buffer on the port of the connection's data rail, registered if needed. */
struct ibv_mr *bolt_registration_rail_mr(struct bolt_connection *connection, int rail,
					 struct bolt_registration *registration, void *address,
					 size_t length);
/*
 * Gives back a transfer's registration: an exposed one is deregistered; one
 * of this end's stays cached only if covered by an open MR.
 */
void bolt_registration_release(struct bolt_domain *domain, struct bolt_registration *registration,
			       bool covered);

#endif /* BOLT_REGISTRATION_H */
