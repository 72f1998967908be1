/*
 * bolt_link.c: links, the control rail's queue pairs. A domain makes one to
 * a peer domain on the first connection between their endpoints, and the
 * connections between any other pair of their endpoints join it, up to
 * BOLT_LINK_SLOTS: Thunderbolt gives a device 10 queue pairs, and an NCCL
 * plugin or an MPI library opens several endpoints per peer.
 *
 * The link owns its queue pair and the receives posted on it; the peer's
 * credits count those receives, whichever connection's message takes one.
 * Each connection has a slot, the same number at both ends: messages name it
 * in their header, writes with immediate data in the immediate. The domain
 * that answers a join chooses the slot, from its half of them (by domain id),
 * so two joins at once never choose the same slot.
 *
 * A link sits on the domain's own port, or, for a peer that port does not
 * reach (a Thunderbolt mesh of more than two hosts), on another port of the
 * domain, found by probing (bolt_connection.c); transfers over it register
 * their buffers on that port (a stripe port carries RDMA write, or the
 * domain does not open it), and so do regions granted over it (direct
 * writes); it has no data rails or stripes, which belong to the domain's own
 * port.
 *
 * A connection that leaves takes nothing with it: the receives stay with the
 * link, and its sends still posted complete later, their buffers' device
 * registrations held by the send until then. The last connection to leave
 * retires the link: its queue pair goes, and its buffers return once the
 * device has been polled empty after that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_random.h"
#include "connection/bolt_link_move.h"

/* A peer out of credits must find at least half of them posted, to be returned. */
_Static_assert(BOLT_LINK_REPOST_BATCH <= BOLT_LINK_RECEIVE_DEPTH / 4, "repost batch too large");

int bolt_link_port_count(const struct bolt_domain *domain)
{
	return 1 + domain->stripe_port_count;
}

/*
 * The domain's port number index, if it can carry a link: its control
 * buffers registered there, and not another domain's own port, whose few
 * queue pairs are that domain's.
 */
static struct bolt_rail_port *bolt_link_port(struct bolt_domain *domain, int index)
{
	struct bolt_rail_port *port;

	if (index < 0 || index >= bolt_link_port_count(domain))
		return NULL;
	if (!index)
		return &domain->primary;
	port = bolt_link_port_of_index(domain, index);
	return port->control_mr && !bolt_rail_port_claimed(port) ? port : NULL;
}

int bolt_link_port_index(const struct bolt_link *link)
{
	const struct bolt_domain *domain = link->domain;

	return link->port == &domain->primary ? 0 : 1 + (int) (link->port - domain->stripe_ports);
}

void bolt_link_describe(const struct bolt_link *link, struct bolt_handshake *handshake)
{
	struct bolt_peer_bounce bounce;

	handshake->port = (uint8_t) bolt_link_port_index(link);
	memcpy(handshake->gid, link->port->gid.raw, sizeof(handshake->gid));
	handshake->qpn = link->qp->qp_num;
	handshake->psn = link->psn;
	handshake->peer_qpn = link->peer_qpn;
	handshake->receive_depth = link->receive_depth;
	bolt_bounce_describe_own(link, &bounce);
	handshake->bounce_address = bounce.address;
	handshake->bounce_rkey = bounce.rkey;
	handshake->bounce_size = bounce.size;
}

struct bolt_rail_port *bolt_link_port_of_index(struct bolt_domain *domain, int index)
{
	return index ? &domain->stripe_ports[index - 1] : &domain->primary;
}

struct bolt_rail_port *bolt_link_other_port(struct bolt_domain *domain, int skipped, uint64_t index)
{
	uint64_t number = index < (uint64_t) skipped ? index : index + 1;

	return number < (uint64_t) bolt_link_port_count(domain) ?
	       bolt_link_port_of_index(domain, (int) number) : NULL;
}

bool bolt_link_on_own_ports(const struct bolt_link *link)
{
	return link->port == &link->domain->primary && link->peer_port == 0;
}

/* The queue pair within the port's budget, in INIT with its receives posted. */
static int bolt_link_create_qp(struct bolt_link *link)
{
	struct bolt_verbs *verbs = &link->domain->fabric->verbs;
	struct bolt_rail_port *port = link->port;
	int ret;

	if (port->qp_count >= port->budget.qp_budget) {
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
			"%s allows %d queue pairs and this domain uses them all: no connection to one more peer\n",
			port->device.name, port->budget.qp_budget);
		return -FI_ENOSPC;
	}
	link->qp = bolt_qp_create(verbs, port->handle.pd, port->handle.cq, port->qp_type,
				  (uint32_t) port->budget.queue_depth, 0);
	if (!link->qp) {
		FI_WARN(&bolt_prov, FI_LOG_EP_CTRL,
			"%s refused a queue pair (%s): its limit is %d queue pairs, shared by every process on it\n",
			port->device.name, strerror(errno), port->budget.qp_budget);
		return -FI_ENOSPC;
	}
	port->qp_count++;
	link->psn = bolt_random_u32() & 0xffffff;
	link->receive_depth = BOLT_LINK_RECEIVE_DEPTH;
	ret = bolt_qp_init(verbs, link->qp, port->qp_local.port_num);
	if (ret)
		return ret;
	bolt_bounce_create(link);
	return bolt_link_receive_post_initial(link);
}

/* Its queue pair goes; its buffers wait for the next full poll (bolt_link_reclaim). */
void bolt_link_retire(struct bolt_link *link)
{
	struct bolt_domain *domain = link->domain;

	bolt_link_move_unlink(link);
	if (link->qp) {
		domain->fabric->verbs.destroy_qp(link->qp);
		link->qp = NULL;
		link->port->qp_count--;
	}
	link->retired_generation = domain->poll_generation;
	DL_DELETE(domain->links, link);
	DL_APPEND(domain->retired_links, link);
}

int bolt_link_create(struct bolt_domain *domain, int port, uint64_t peer_domain_id,
		     struct bolt_link **result)
{
	struct bolt_link *link;
	int ret;

	if (!bolt_link_port(domain, port))
		return -FI_EHOSTUNREACH;
	link = calloc(1, sizeof(*link));
	if (!link)
		return -FI_ENOMEM;
	link->domain = domain;
	link->port = bolt_link_port(domain, port);
	link->peer_domain_id = peer_domain_id;
	link->shareable = domain->fabric->params.share_queue_pairs && peer_domain_id &&
			  peer_domain_id != domain->domain_id;
	DL_APPEND(domain->links, link);
	ret = bolt_link_create_qp(link);
	if (ret) {
		bolt_link_retire(link);
		return ret;
	}
	*result = link;
	return 0;
}

int bolt_link_connect(struct bolt_link *link, uint32_t qpn, uint32_t psn, const uint8_t *gid,
		      uint32_t receive_depth, const struct bolt_peer_bounce *peer_bounce)
{
	struct bolt_domain *domain = link->domain;
	struct bolt_qp_local local = link->port->qp_local;
	struct bolt_qp_remote remote = { .qpn = qpn, .psn = psn };

	local.psn = link->psn;
	memcpy(remote.gid.raw, gid, sizeof(remote.gid.raw));
	link->peer_gid = remote.gid;
	link->peer_qpn = qpn;
	link->peer_receive_depth = receive_depth;
	link->send_credits = receive_depth;
	link->peer_bounce = *peer_bounce;
	return bolt_qp_connect(&domain->fabric->verbs, link->qp, &local, &remote);
}

/* Whether this domain chooses the odd slots of links to that peer (the even ones from 2 if not). */
static bool bolt_link_chooses_odd(const struct bolt_link *link)
{
	return link->domain->domain_id < link->peer_domain_id;
}

int bolt_link_free_slot(struct bolt_link *link)
{
	bool odd = bolt_link_chooses_odd(link);

	for (int tried = 0; tried < BOLT_LINK_SLOTS; tried++) {
		int slot = (link->next_slot + tried) % BOLT_LINK_SLOTS;

		/* Slot 0 is the first connection's, which made the link. */
		if (!slot || (slot % 2 == 1) != odd || link->slots[slot])
			continue;
		/* A slot comes round again only after the others: a late message
		 * for its last occupant has long arrived. */
		link->next_slot = slot + 1;
		return slot;
	}
	return -1;
}

struct bolt_link *bolt_link_find_joinable(struct bolt_domain *domain, uint64_t peer_domain_id)
{
	struct bolt_link *link, *connecting = NULL;

	DL_FOREACH(domain->links, link) {
		if (!link->shareable || link->retiring || !link->users ||
		    link->peer_domain_id != peer_domain_id)
			continue;
		if (link->established)
			return link;
		connecting = link;
	}
	return connecting;
}

struct bolt_link *bolt_link_find(struct bolt_domain *domain, uint64_t peer_domain_id, uint32_t qpn,
				 uint32_t peer_qpn)
{
	struct bolt_link *link;

	DL_FOREACH(domain->links, link)
		if (link->shareable && !link->retiring && link->peer_domain_id == peer_domain_id &&
		    link->qp->qp_num == qpn && link->peer_qpn == peer_qpn)
			return link;
	return NULL;
}

int bolt_link_join(struct bolt_link *link, struct bolt_connection *connection, int slot,
		   uint8_t slot_nonce)
{
	if (slot < 0 || slot >= BOLT_LINK_SLOTS || link->slots[slot])
		return -FI_EBUSY;
	link->slots[slot] = connection;
	link->users++;
	connection->link = link;
	connection->slot = (uint8_t) slot;
	connection->slot_nonce = slot_nonce;
	return 0;
}

/*
 * The connection's sends still posted on the link complete after it left:
 * each keeps what it needs till then, the device registration of the
 * buffer an RDMA write reads included (the operation has ended by then).
 */
static void bolt_link_orphan_sends(struct bolt_link *link, const struct bolt_connection *connection)
{
	struct bolt_domain *domain = link->domain;

	for (uint32_t i = 0; i < domain->control_pool.buffer_count; i++) {
		struct bolt_control_buffer *record = &domain->control_buffers[i];

		if (!record->posted || record->link != link || record->connection != connection)
			continue;
		if (record->operation)
			connection->manager->events->send_orphaned(record);
		record->connection = NULL;
		record->operation = NULL;
	}
}

void bolt_link_leave(struct bolt_connection *connection)
{
	struct bolt_link *link = connection->link;

	if (!link)
		return;
	if (link->qp)
		bolt_link_orphan_sends(link, connection);
	/* Its sends that came back flushed from the link this one replaced wait there. */
	if (link->predecessor)
		bolt_link_orphan_sends(link->predecessor, connection);
	link->slots[connection->slot] = NULL;
	link->users--;
	connection->link = NULL;
	if (!link->users)
		bolt_link_retire(link);
}

struct bolt_connection *bolt_link_connection(const struct bolt_link *link, uint8_t slot)
{
	struct bolt_connection *connection = slot < BOLT_LINK_SLOTS ? link->slots[slot] : NULL;

	return connection && connection->state != BOLT_CONNECTION_FAILED ? connection : NULL;
}

void bolt_link_fail(struct bolt_link *link, int error, const char *why)
{
	link->failing = true;
	/* Each connection leaves as it fails; the last one retires the link. */
	for (int slot = 0; slot < BOLT_LINK_SLOTS && link->qp; slot++)
		if (link->slots[slot])
			bolt_connection_fail(link->slots[slot], error, why);
}

void bolt_link_progress(struct bolt_link *link)
{
	for (int slot = 0; slot < BOLT_LINK_SLOTS && link->qp; slot++) {
		struct bolt_connection *connection = bolt_link_connection(link, (uint8_t) slot);

		if (connection && connection->state == BOLT_CONNECTION_ESTABLISHED)
			connection->manager->events->can_send(connection);
	}
}

void bolt_link_reclaim(struct bolt_domain *domain)
{
	struct bolt_link *link, *next;

	DL_FOREACH_SAFE(domain->retired_links, link, next) {
		/* The CQ has been polled empty since its queue pair went: no
		 * completion can still name its buffers. */
		if (domain->poll_generation <= link->retired_generation)
			continue;
		for (uint32_t i = 0; i < domain->control_pool.buffer_count; i++) {
			struct bolt_control_buffer *record = &domain->control_buffers[i];

			if (record->posted && record->link == link)
				bolt_control_buffer_put(domain, record);
		}
		DL_DELETE(domain->retired_links, link);
		bolt_bounce_destroy(link);
		free(link);
	}
}
