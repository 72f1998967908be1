/*
 * bolt_direct_write.c: writes into regions the target granted. A rendezvous
 * write costs three control messages around its one RDMA write (for 64 KiB
 * most of the time), and a small write goes in segments and waits for an
 * ack. So the target of a write it accepts also grants the whole MR, once
 * per initiator (whose writes say whether it holds a grant): it registers
 * the MR on the port of the connection's link (the domain's own, or another
 * that reaches that peer), holds that registration while the MR is open, and
 * tells the initiator where it is and its rkey.
 *
 * Later writes into the region are one RDMA write each on the control
 * rail's queue pair, with immediate data that consumes a control receive:
 * so they count against credits like messages, and the target sees each,
 * reports it and counts it for loss detection. On RC the immediate is the
 * remote CQ data, or 0 for none, and only the link's first connection
 * (slot 0) may send one: it alone has the immediate whole. On UC the
 * immediate names the connection's slot and no transfer, so remote CQ data
 * has to ask there. On RC, to a target that counts no remote writes, a
 * write without remote CQ data is a plain RDMA write the target never sees,
 * as with raw verbs, from any slot. Writes that need the target's word still
 * ask: FI_DELIVERY_COMPLETE, remote CQ data 0 (or any, on UC), out of bounds.
 *
 * Closing the MR revokes the grant: each peer forgets it, turns its writes
 * to the region still queued into requests, and answers. The registration
 * stays until every peer told has answered (or its connection went): the
 * writes a peer posted before it learned of the close are ahead of its
 * answer on the queue pair, and land as they would have a moment earlier,
 * instead of finding no registration, which on RC fails the queue pair (and
 * every connection of its link) and on UC loses the write (and fails its
 * connection). fi_close does not wait for the answers. A peer that has not
 * answered within FI_BOLT_LIVENESS_TIMEOUT (stopped, or hostile) is not
 * waited for longer: its connection fails, with its link's queue pair where
 * others share it (bolt_peer_exposes_memory), and the registration goes.
 *
 * The registration is of exactly the region, with write access only
 * (bolt_mr_cache_expose): the rkey the peer holds opens no byte beyond it,
 * allows no RDMA read, and opens nothing once the registration goes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>
#include <uthash.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"

/* Direct writes' registrations held per domain, at most: half the budget, the rest for transfers. */
static bool bolt_direct_write_may_hold(const struct bolt_domain *domain)
{
	return domain->grants_held < domain->primary.budget.user_mr_budget / 2;
}

/*
 * The whole of mr registered on port and held for as long as it is open;
 * false if it cannot be.
 */
static bool bolt_direct_write_hold(struct bolt_domain *domain, struct bolt_mr *mr, int port)
{
	int ret;

	if (mr->grants[port])
		return true;
	if (!(mr->access & FI_REMOTE_WRITE) || !mr->length || mr->length > BOLT_MAX_MSG_SIZE ||
	    !bolt_direct_write_may_hold(domain))
		return false;
	/* Exactly the region, for the writes its FI_REMOTE_WRITE allows: never a peer's read. */
	ret = bolt_mr_cache_expose(bolt_link_port_of_index(domain, port)->mr_cache, mr->address,
				   mr->length, BOLT_MR_CACHE_PEER_WRITE, &mr->grants[port]);
	if (ret) {
		FI_INFO(&bolt_prov, FI_LOG_MR, "no registration to grant a region of %zu bytes: %s\n",
			mr->length, fi_strerror(-ret));
		mr->grants[port] = NULL;
		return false;
	}
	domain->grants_held++;
	return true;
}

/* Whether this end counts remote writes: then it must see each, even without remote CQ data. */
static bool bolt_direct_write_counted(const struct bolt_endpoint *endpoint)
{
	return endpoint->counters[BOLT_COUNTER_REMOTE_WRITE] != NULL;
}

/*
 * The open MR of key, held on the port of the connection's link, whichever
 * that is; NULL if there is none or it cannot be held there.
 */
static struct bolt_mr *bolt_direct_write_held_here(struct bolt_connection *connection, uint64_t key)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	struct bolt_mr *mr;

	if (!bolt_rail_port_data_writes(endpoint->domain, connection->link->port))
		return NULL;
	mr = bolt_mr_find(endpoint, key);
	return mr && bolt_direct_write_hold(endpoint->domain, mr, bolt_link_port_index(connection->link)) ?
	       mr : NULL;
}

void bolt_direct_write_grant(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_endpoint *endpoint = bolt_connection_endpoint(connection);
	int port = bolt_link_port_index(connection->link);
	uint64_t key = header->key;
	struct bolt_mr *mr;
	struct bolt_transmit *grant;

	if ((header->flags & BOLT_WIRE_FLAG_GRANTED) || !(mr = bolt_direct_write_held_here(connection, key)))
		return;
	grant = bolt_transmit_internal(connection, BOLT_WIRE_REGION_GRANT, 0,
				       bolt_mr_cache_entry_mr(mr->grants[port])->rkey);
	if (!grant)
		return;
	grant->remote_key = key;
	grant->key_port = port;
	grant->wire_flags = bolt_direct_write_counted(endpoint) ? 0 : BOLT_WIRE_FLAG_QUIET;
	grant->tag = bolt_mr_base(mr);
	grant->length = mr->length;
	grant->remote_address = (uintptr_t) mr->address;
	bolt_transmit_start(grant);
}

static void bolt_direct_write_forget(struct bolt_connection *connection, uint64_t key)
{
	struct bolt_region_grant *grant;

	HASH_FIND(hh, bolt_peer_of(connection)->grants, &key, sizeof(key), grant);
	if (!grant)
		return;
	HASH_DEL(bolt_peer_of(connection)->grants, grant);
	free(grant);
}

/* connection owes revoke an answer; false without the memory to remember it. */
static bool bolt_direct_write_owed(struct bolt_revoke *revoke, struct bolt_connection *connection)
{
	struct bolt_connection **owed;

	owed = realloc(revoke->owed, (size_t) (revoke->owed_count + 1) * sizeof(*owed));
	if (!owed)
		return false;
	revoke->owed = owed;
	owed[revoke->owed_count++] = connection;
	return true;
}

/* Gives back the registrations of grants, one per port, and empties it. */
static void bolt_direct_write_release(struct bolt_domain *domain,
				      struct bolt_mr_cache_entry *grants[BOLT_LINK_PORTS_MAX])
{
	for (int port = 0; port < BOLT_LINK_PORTS_MAX; port++) {
		if (!grants[port])
			continue;
		bolt_mr_cache_release(bolt_link_port_of_index(domain, port)->mr_cache, grants[port]);
		grants[port] = NULL;
		domain->grants_held--;
	}
}

static void bolt_direct_write_revoke_destroy(struct bolt_domain *domain, struct bolt_revoke *revoke)
{
	DL_DELETE(domain->revokes, revoke);
	bolt_direct_write_release(domain, revoke->grants);
	free(revoke->owed);
	free(revoke);
}

/* connection owes revoke no answer any more: the last one releases the registration. */
static void bolt_direct_write_settle(struct bolt_domain *domain, struct bolt_revoke *revoke,
				     struct bolt_connection *connection)
{
	for (int index = 0; index < revoke->owed_count; index++) {
		if (revoke->owed[index] != connection)
			continue;
		revoke->owed[index] = revoke->owed[--revoke->owed_count];
		if (!revoke->owed_count && !revoke->telling)
			bolt_direct_write_revoke_destroy(domain, revoke);
		return;
	}
}

/*
 * Tells the peers of endpoint that key's region may no longer be written
 * directly; those told owe revoke (if any) an answer.
 */
static void bolt_direct_write_revoke_on(struct bolt_endpoint *endpoint, uint64_t key,
					struct bolt_revoke *revoke)
{
	struct bolt_connection *connection, *next;

	HASH_ITER(hh, endpoint->connection_manager.connections, connection, next) {
		struct bolt_transmit *message;

		if (connection->state != BOLT_CONNECTION_ESTABLISHED)
			continue;
		/* Our own grant to ourselves: gone before the next write, with no message. */
		if (connection->loopback) {
			bolt_direct_write_forget(connection, key);
			bolt_transmit_revoked(connection, key);
			continue;
		}
		/* Without the room to wait for its answer, the peer is not asked for one. */
		if (revoke && !bolt_direct_write_owed(revoke, connection))
			continue;
		message = bolt_transmit_internal(connection, BOLT_WIRE_REGION_REVOKE,
						 revoke ? revoke->id : 0, 0);
		/* No memory for it: the connection failed, and its failure settled what it owed. */
		if (!message)
			continue;
		message->remote_key = key;
		bolt_transmit_start(message);
	}
}

void bolt_direct_write_revoke(struct bolt_mr *mr)
{
	struct bolt_domain *domain = mr->domain;
	struct bolt_revoke *revoke;
	struct bolt_endpoint *endpoint;
	bool held = false;

	for (int port = 0; port < BOLT_LINK_PORTS_MAX; port++)
		held |= mr->grants[port] != NULL;
	if (!held)
		return;
	/* Without memory to wait, the registrations go at once, as if every answer had come. */
	revoke = calloc(1, sizeof(*revoke));
	if (revoke) {
		revoke->id = ++domain->next_revoke_id;
		revoke->key = mr->mr_fid.key;
		revoke->deadline_ns = bolt_connection_now_ns() + bolt_domain_liveness_ns(domain);
		memcpy(revoke->grants, mr->grants, sizeof(revoke->grants));
		memset(mr->grants, 0, sizeof(mr->grants));
		/* A failed post may fail a connection told already: it must not free revoke yet. */
		revoke->telling = true;
		DL_APPEND(domain->revokes, revoke);
	}
	if (mr->endpoint) {
		bolt_direct_write_revoke_on(mr->endpoint, mr->mr_fid.key, revoke);
	} else {
		DL_FOREACH(domain->endpoints, endpoint)
			bolt_direct_write_revoke_on(endpoint, mr->mr_fid.key, revoke);
	}
	if (!revoke) {
		bolt_direct_write_release(domain, mr->grants);
	} else {
		revoke->telling = false;
		if (!revoke->owed_count)
			bolt_direct_write_revoke_destroy(domain, revoke);
	}
}

void bolt_direct_write_revoke_answered(struct bolt_connection *connection,
				       const struct bolt_wire_header *header)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct bolt_revoke *revoke;

	DL_FOREACH(domain->revokes, revoke) {
		if (revoke->id == header->request_id) {
			bolt_direct_write_settle(domain, revoke, connection);
			return;
		}
	}
}

void bolt_direct_write_release_all(struct bolt_domain *domain)
{
	while (domain->revokes)
		bolt_direct_write_revoke_destroy(domain, domain->revokes);
}

/* A revoke past its deadline that a peer still owes an answer, or NULL. */
static struct bolt_revoke *bolt_direct_write_overdue(struct bolt_domain *domain, uint64_t now_ns)
{
	struct bolt_revoke *revoke;

	DL_FOREACH(domain->revokes, revoke)
		if (revoke->owed_count && now_ns >= revoke->deadline_ns)
			return revoke;
	return NULL;
}

void bolt_direct_write_check_revokes(struct bolt_domain *domain)
{
	struct bolt_revoke *revoke;
	uint64_t now_ns;
	char what[64];

	if (!domain->revokes)
		return;
	now_ns = bolt_connection_now_ns();
	/* Each failure settles all its connection owed, which may free revokes: look again from the start. */
	while ((revoke = bolt_direct_write_overdue(domain, now_ns))) {
		struct bolt_connection *connection = revoke->owed[0];

		snprintf(what, sizeof(what), "the grant of region %#llx",
			 (unsigned long long) revoke->key);
		bolt_peer_fail_unanswered(connection, what);
		/* Settled by the failure already; this makes sure the loop moves on whatever it did. */
		bolt_direct_write_forget_all(connection);
	}
}

bool bolt_direct_write_owes_answer(const struct bolt_connection *connection)
{
	const struct bolt_revoke *revoke;

	DL_FOREACH(connection->manager->domain->revokes, revoke)
		for (int index = 0; index < revoke->owed_count; index++)
			if (revoke->owed[index] == connection)
				return true;
	return false;
}

/* Whether the region of a grant over connection is still granted there. */
static bool bolt_direct_write_still_held(struct bolt_connection *connection,
					 const struct bolt_wire_header *header)
{
	struct bolt_mr *mr = bolt_mr_find(bolt_connection_endpoint(connection), header->key);
	int port = bolt_link_port_index(connection->link);

	return mr && mr->grants[port] &&
	       bolt_mr_cache_entry_mr(mr->grants[port])->rkey == header->cq_data;
}

struct ibv_mr *bolt_direct_write_key_here(struct bolt_connection *connection, uint64_t key)
{
	struct bolt_mr *mr = bolt_direct_write_held_here(connection, key);

	return mr ? bolt_mr_cache_entry_mr(mr->grants[bolt_link_port_index(connection->link)]) : NULL;
}

void bolt_direct_write_granted(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_region_grant *grant;

	if (header->tag + header->total_length < header->tag ||
	    header->address + header->total_length < header->address) {
		bolt_connection_fail(connection, FI_EIO, "a granted region past the end of memory");
		return;
	}
	/* To ourselves, a grant may arrive after the region closed: revoking found nothing then. */
	if (connection->loopback && !bolt_direct_write_still_held(connection, header))
		return;
	HASH_FIND(hh, bolt_peer_of(connection)->grants, &header->key, sizeof(header->key), grant);
	if (!grant) {
		/* Without memory for it, writes keep asking: nothing is lost. */
		grant = calloc(1, sizeof(*grant));
		if (!grant)
			return;
		grant->key = header->key;
		HASH_ADD(hh, bolt_peer_of(connection)->grants, key, sizeof(grant->key), grant);
	}
	grant->base = header->tag;
	grant->length = header->total_length;
	grant->target_address = header->address;
	grant->rkey = header->cq_data;
	grant->port = bolt_rendezvous_key_port(connection, header);
	grant->quiet = header->flags & BOLT_WIRE_FLAG_QUIET;
}

/*
 * Every direct write to the region already posted is ahead of the answer on
 * the queue pair; those still queued ask instead, and the target refuses.
 */
void bolt_direct_write_revoked(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_transmit *answer;

	bolt_direct_write_forget(connection, header->key);
	bolt_transmit_revoked(connection, header->key);
	if (!header->request_id)
		return;
	answer = bolt_transmit_internal(connection, BOLT_WIRE_REGION_REVOKED, header->request_id, 0);
	if (answer)
		bolt_transmit_start(answer);
}

void bolt_direct_write_forget_all(struct bolt_connection *connection)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct bolt_region_grant *grant, *next;
	struct bolt_revoke *revoke, *next_revoke;

	HASH_ITER(hh, bolt_peer_of(connection)->grants, grant, next) {
		HASH_DEL(bolt_peer_of(connection)->grants, grant);
		free(grant);
	}
	DL_FOREACH_SAFE(domain->revokes, revoke, next_revoke)
		bolt_direct_write_settle(domain, revoke, connection);
}

/* Whether the write itself may go directly, whatever the target granted. */
static bool bolt_direct_write_suits(const struct bolt_transmit *transmit)
{
	bool remote_cq_data = transmit->flags & FI_REMOTE_CQ_DATA;

	return transmit->op == BOLT_WIRE_WRITE && !transmit->internal && !transmit->inject_copy &&
	       bolt_rendezvous_registration_pays(transmit) &&
	       !(transmit->flags & FI_DELIVERY_COMPLETE) &&
	       /*
		* Immediate data 0 means no remote CQ data, and on RC one value names
		* a message (bolt_wire.h); on UC, any other value names a rendezvous
		* transfer, so remote CQ data has to ask there.
		*/
	       (!remote_cq_data ||
		(transmit->cq_data && transmit->cq_data != BOLT_IMMEDIATE_RC_GRANTED &&
		 !bolt_connection_unreliable(transmit->connection)));
}

/*
 * The grant of the region transmit writes to; NULL if none, or if its rkey
 * is for a port the control rail has left: forgotten then, so that the next
 * write asks, says it holds no grant, and the target grants the region anew
 * on the port the control rail is on now.
 */
static struct bolt_region_grant *bolt_direct_write_find(const struct bolt_transmit *transmit)
{
	struct bolt_connection *connection = transmit->connection;
	struct bolt_region_grant *grant;

	HASH_FIND(hh, bolt_peer_of(connection)->grants, &transmit->remote_key,
		  sizeof(transmit->remote_key), grant);
	if (grant && grant->port != connection->link->port) {
		bolt_direct_write_forget(connection, grant->key);
		return NULL;
	}
	return grant;
}

bool bolt_direct_write_granted_key(const struct bolt_transmit *transmit)
{
	return bolt_peer_of(transmit->connection)->grants && bolt_direct_write_find(transmit);
}

bool bolt_direct_write_prepare(struct bolt_transmit *transmit)
{
	struct bolt_connection *connection = transmit->connection;
	struct bolt_region_grant *grant;
	uint64_t offset;
	bool plain;

	/* A peer may grant what this end's device cannot write: it only knows its own. */
	if (!bolt_peer_of(connection)->grants || connection->state != BOLT_CONNECTION_ESTABLISHED ||
	    !bolt_rail_port_data_writes(connection->manager->domain, connection->link->port) ||
	    !bolt_direct_write_suits(transmit))
		return false;
	/* Worth a request and its answer: stripes over the other cables too. */
	if (transmit->length >= (size_t) connection->manager->domain->fabric->params.stripe_threshold &&
	    bolt_data_rail_striping(connection))
		return false;
	grant = bolt_direct_write_find(transmit);
	/* Out of bounds: the target answers with the error. */
	if (!grant || transmit->remote_address < grant->base)
		return false;
	offset = transmit->remote_address - grant->base;
	if (offset > grant->length || transmit->length > grant->length - offset)
		return false;
	/* UC loses writes without a trace: the target counts each for loss detection. */
	plain = grant->quiet && !bolt_connection_unreliable(connection) &&
		!(transmit->flags & FI_REMOTE_CQ_DATA);
	if (!plain && !bolt_connection_may_write_immediate(connection))
		return false;
	if (!bolt_registration_acquire(connection, transmit->iov[0].iov_base,
				      transmit->length, &transmit->registration))
		return false;
	transmit->target_address = grant->target_address + offset;
	transmit->target_rkey = grant->rkey;
	transmit->target_port = grant->port;
	transmit->target_length = transmit->length;
	transmit->plain_write = plain;
	transmit->protocol = BOLT_PROTOCOL_DIRECT_WRITE;
	transmit->reply_pending = false;
	return true;
}

void bolt_direct_write_describe(const struct bolt_transmit *transmit, struct ibv_sge *sge,
				struct ibv_send_wr *wr)
{
	bolt_rendezvous_describe_write(transmit, sge, wr);
	if (transmit->plain_write)
		wr->opcode = IBV_WR_RDMA_WRITE;
	if (bolt_connection_unreliable(transmit->connection))
		wr->imm_data = (uint32_t) transmit->connection->slot << BOLT_IMMEDIATE_SLOT_SHIFT;
	else
		wr->imm_data = transmit->flags & FI_REMOTE_CQ_DATA ? transmit->cq_data : 0;
}

void bolt_direct_write_arrived(struct bolt_connection *connection, const struct ibv_wc *wc)
{
	/* On UC the immediate names only the slot: remote CQ data never comes this way. */
	uint32_t data = wc->wc_flags & IBV_WC_WITH_IMM && !bolt_connection_unreliable(connection) ?
			wc->imm_data : 0;

	connection->stripes_received++;
	bolt_endpoint_count_remote(bolt_connection_endpoint(connection), BOLT_COUNTER_REMOTE_WRITE, data != 0, data,
				   wc->byte_len);
}
