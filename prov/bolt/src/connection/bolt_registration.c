/*
 * bolt_registration.c: device registrations of the buffers one transfer
 * reads or writes by RDMA, on the ports a connection's rails are on: the
 * port of its control rail (its link's), and each data rail's. Every RDMA
 * protocol (rendezvous, direct writes, receives granted ahead, bounce
 * buffers, reads written back) registers through here. A buffer the peer
 * writes into (or on RC reads from) is exposed: registered for exactly its
 * bytes with that access only, and deregistered when the transfer releases
 * it, so the key the peer was given opens nothing else and nothing
 * afterwards. A buffer this end only reads from gets a shared cached
 * registration no peer has a key to; it stays in the port's cache only for
 * memory inside an open MR: other memory may be freed as soon as the
 * transfer completes, and a cached registration would then name the wrong
 * pages.
 */
#include "connection/bolt_connection.h"

/*
 * Gives back one port's registration: an exposed one goes at release;
 * outside an open MR, a shared one may not stay cached.
 */
static void bolt_registration_release_entry(struct bolt_mr_cache *cache,
					  struct bolt_mr_cache_entry **entry, bool keep)
{
	struct ibv_mr *mr;
	void *address;
	size_t length;

	if (!*entry)
		return;
	/* Release may deregister at once (an entry merged into a larger one): read first. */
	mr = bolt_mr_cache_entry_mr(*entry);
	address = mr->addr;
	length = mr->length;
	bolt_mr_cache_release(cache, *entry);
	if (!keep)
		bolt_mr_cache_invalidate(cache, address, length);
	*entry = NULL;
}

void bolt_registration_release(struct bolt_domain *domain, struct bolt_registration *registration,
				bool covered)
{
	/* An exposed entry is gone already when released: nothing cached to drop. */
	bool keep = covered || registration->exposed;

	for (int index = domain->stripe_port_count - 1; index >= 0; index--)
		bolt_registration_release_entry(domain->stripe_ports[index].mr_cache,
					      &registration->stripe[index], keep);
	bolt_registration_release_entry(domain->primary.mr_cache, &registration->primary, keep);
	registration->exposed = false;
	registration->peer_reads = false;
}

/* Registers length bytes at address in cache, exposed or shared; false, logged, if it cannot now. */
static bool bolt_registration_acquire_entry(struct bolt_mr_cache *cache, void *address, size_t length,
				    const struct bolt_registration *registration,
				    struct bolt_mr_cache_entry **entry)
{
	int access = registration->peer_reads ? BOLT_MR_CACHE_PEER_READ : BOLT_MR_CACHE_PEER_WRITE;
	int ret = registration->exposed ? bolt_mr_cache_expose(cache, address, length, access, entry) :
		  bolt_mr_cache_acquire(cache, address, length, entry);

	if (ret) {
		FI_INFO(&bolt_prov, FI_LOG_EP_DATA,
			"no registration for %zu bytes (%s): segments instead\n", length, fi_strerror(-ret));
		*entry = NULL;
	}
	return !ret;
}

/* The entry of registration on port. */
static struct bolt_mr_cache_entry **bolt_registration_entry(const struct bolt_domain *domain,
							  struct bolt_registration *registration,
							  const struct bolt_rail_port *port)
{
	return port == &domain->primary ? &registration->primary :
	       &registration->stripe[port - domain->stripe_ports];
}

/* The port of the connection's control rail: its link's, or the domain's own before it has one. */
static struct bolt_rail_port *bolt_registration_link_port(const struct bolt_connection *connection)
{
	return connection->link ? connection->link->port : &connection->manager->domain->primary;
}

/* registration's MR on port, registered now if it is not yet; NULL if it cannot be. */
static struct ibv_mr *bolt_registration_port_mr(struct bolt_domain *domain, struct bolt_rail_port *port,
					      struct bolt_registration *registration, void *address,
					      size_t length)
{
	struct bolt_mr_cache_entry **entry = bolt_registration_entry(domain, registration, port);

	if (!*entry && !bolt_registration_acquire_entry(port->mr_cache, address, length, registration,
						       entry))
		return NULL;
	return bolt_mr_cache_entry_mr(*entry);
}

bool bolt_registration_acquire(struct bolt_connection *connection, void *address, size_t length,
			      struct bolt_registration *registration)
{
	return bolt_registration_port_mr(connection->manager->domain, bolt_registration_link_port(connection),
				       registration, address, length) != NULL;
}

/* Exposed for the peer to write into, or with peer_reads to read from. */
static bool bolt_registration_expose_for(struct bolt_connection *connection, void *address,
					 size_t length, bool peer_reads,
					 struct bolt_registration *registration)
{
	registration->exposed = true;
	registration->peer_reads = peer_reads;
	if (bolt_registration_acquire(connection, address, length, registration))
		return true;
	registration->exposed = false;
	registration->peer_reads = false;
	return false;
}

bool bolt_registration_expose(struct bolt_connection *connection, void *address, size_t length,
			      struct bolt_registration *registration)
{
	return bolt_registration_expose_for(connection, address, length, false, registration);
}

bool bolt_registration_expose_readable(struct bolt_connection *connection, void *address, size_t length,
				       struct bolt_registration *registration)
{
	return bolt_registration_expose_for(connection, address, length, true, registration);
}

struct ibv_mr *bolt_registration_link_mr(const struct bolt_connection *connection,
				       const struct bolt_registration *registration)
{
	const struct bolt_domain *domain = connection->manager->domain;
	const struct bolt_rail_port *port = bolt_registration_link_port(connection);
	struct bolt_mr_cache_entry *entry = port == &domain->primary ? registration->primary :
					    registration->stripe[port - domain->stripe_ports];

	return entry ? bolt_mr_cache_entry_mr(entry) : NULL;
}

struct ibv_mr *bolt_registration_follow_link(struct bolt_connection *connection,
					     struct bolt_registration *registration)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct bolt_mr_cache_entry *held = registration->primary;
	struct ibv_mr *mr;

	for (int index = 0; !held && index < domain->stripe_port_count; index++)
		held = registration->stripe[index];
	if (!held || !registration->exposed)
		return NULL;
	/* Exposed: the MR is exactly the buffer's bytes. */
	mr = bolt_mr_cache_entry_mr(held);
	return bolt_registration_port_mr(domain, bolt_registration_link_port(connection), registration,
				       mr->addr, mr->length);
}

struct ibv_mr *bolt_registration_rail_mr(struct bolt_connection *connection, int rail,
				       struct bolt_registration *registration, void *address,
				       size_t length)
{
	return bolt_registration_port_mr(connection->manager->domain, connection->data_rails[rail].port,
				       registration, address, length);
}
