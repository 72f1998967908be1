/*
 * bolt_failover.c: the stripes of a transfer whose data rail failed (its
 * cable cut, its port down: bolt_data_rail_fail) go on the connection's
 * control rail instead, each once, so that the application sees neither an
 * error nor a byte lost or twice. Two kinds: stripes of an answered
 * transfer not yet posted whose rail is no longer usable, and (RC) stripes
 * posted whose work request came back with an error (retry exceeded, or
 * flushed when the rail's queue pair was put in ERR): exactly those are
 * written again. On UC a moved stripe is one RDMA write with the immediate
 * data that names its transfer, counted like any stripe (a loss of it is
 * found as any other's); on RC a plain write followed by STRIPE_MOVED with
 * that immediate data, which the queue pair delivers after the write.
 * An RC stripe that came back flushed may have landed all the same (the
 * rail failed after the target took it, before the sender heard): the
 * target is asked which did first, and the others are written again; one
 * whose transfer completed there is not written at all (bolt_stripe_tally).
 * Keys are per port: once the control rail moved to another port since the
 * answer (connection/bolt_link_move.c), a write on it first asks the target
 * for its buffer's key there (STRIPE_KEY_ASK, answered by STRIPE_KEY). So
 * do, on UC, the segments of a posted stripe or whole write that the
 * control rail takes after a move or a failed data rail (bolt_rewrite.c).
 */
#include <utlist.h>

#include "bolt_endpoint.h"
#include "protocol/bolt_rdma.h"

/* Where the stripe of rail lies within transmit's data: the shares bolt_transmit_stripes cuts. */
static void bolt_failover_stripe_range(const struct bolt_transmit *transmit, int rail,
				       size_t *offset, size_t *length)
{
	size_t count = (size_t) __builtin_popcount(transmit->rail_mask);
	size_t before = (size_t) __builtin_popcount(transmit->rail_mask & ((1u << rail) - 1));
	size_t share = transmit->target_length / count, extra = transmit->target_length % count;

	*offset = before * share + (before < extra ? before : extra);
	*length = share + (before < extra);
}

/* The flags of transmit's STRIPE_KEY_ASK, which its answer says again: whose buffer it names. */
static uint8_t bolt_failover_ask_kind(const struct bolt_transmit *transmit)
{
	if (transmit->op == BOLT_WIRE_READ_RESPONSE)
		return BOLT_WIRE_FLAG_WRITE_BACK;
	if (transmit->protocol == BOLT_PROTOCOL_GRANTED_RECEIVE)
		return BOLT_WIRE_FLAG_GRANTED;
	if (transmit->protocol == BOLT_PROTOCOL_DIRECT_WRITE)
		return BOLT_WIRE_FLAG_GRANTED | BOLT_WIRE_FLAG_WRITE;
	return 0;
}

/*
 * Asks the target, once, for its key on the control rail's port and which
 * of the uncertain stripes landed (STRIPE_KEY_ASK), posted here and not
 * queued: progress may be walking the queue. The write waits for the answer
 * (bolt_failover_key_arrived); if the link has no room now, key_asked stays
 * false and the next progress asks.
 */
static void bolt_failover_ask_key(struct bolt_connection *connection, struct bolt_transmit *transmit)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct bolt_control_buffer *record;
	struct bolt_wire_header *header;

	if (transmit->key_asked || !bolt_link_can_send_op(connection, BOLT_WIRE_STRIPE_KEY_ASK, 0, 1) ||
	    !(record = bolt_control_buffer_get(domain)))
		return;
	record->send_slots = 1;
	header = (struct bolt_wire_header *) bolt_control_buffer_data(domain, record);
	bolt_link_frame(connection, header, BOLT_WIRE_STRIPE_KEY_ASK, 0);
	header->request_id = transmit->request_id;
	header->flags |= BOLT_WIRE_FLAG_LAST | bolt_failover_ask_kind(transmit);
	/* A granted receive is named by its message's number, a region by its key. */
	header->tag = transmit->protocol == BOLT_PROTOCOL_GRANTED_RECEIVE ? transmit->message_number :
		      transmit->uncertain_rails;
	header->key = transmit->remote_key;
	transmit->asked_rails = transmit->uncertain_rails;
	FI_INFO(&bolt_prov, FI_LOG_EP_DATA, "a write of transfer %llu waits for the target's key on %s:%u\n",
		(unsigned long long) transmit->request_id, connection->link->port->device.name,
		connection->link->port->port.port_num);
	transmit->key_asked = bolt_link_post_buffer(connection, record, sizeof(*header), NULL,
						    bolt_link_bare_send_completed);
}

int bolt_failover_control_keys(struct bolt_connection *connection, struct bolt_transmit *transmit,
				uint32_t *lkey, uint32_t *rkey)
{
	struct ibv_mr *mr;

	/* A write there now would be lost with the port: the control rail moves first. */
	if (connection->link->port->down || transmit->landed_at_target)
		return 1;
	if (transmit->target_port != connection->link->port) {
		bolt_failover_ask_key(connection, transmit);
		return 1;
	}
	if (!bolt_registration_acquire(connection, transmit->iov[0].iov_base, transmit->target_length,
				       &transmit->registration))
		return -FI_ENOMEM;
	mr = bolt_registration_link_mr(connection, &transmit->registration);
	*lkey = mr->lkey;
	*rkey = transmit->target_rkey;
	return 0;
}

int bolt_failover_write_keys(struct bolt_connection *connection, const struct bolt_control_buffer *record,
			     uint32_t *lkey, uint32_t *rkey)
{
	struct bolt_transmit *transmit = record->operation;

	/* The target answers for a rendezvous transfer's buffer, a granted receive or region. */
	if (!transmit || (transmit->protocol != BOLT_PROTOCOL_RENDEZVOUS &&
			  transmit->protocol != BOLT_PROTOCOL_GRANTED_RECEIVE &&
			  transmit->protocol != BOLT_PROTOCOL_DIRECT_WRITE))
		return -FI_EOPNOTSUPP;
	return bolt_failover_control_keys(connection, transmit, lkey, rkey);
}

/* Posts the stripe of rail on the control rail; false if the link has no room now. */
static bool bolt_failover_post(struct bolt_connection *connection, struct bolt_transmit *transmit,
			       int rail)
{
	struct bolt_domain *domain = connection->manager->domain;
	bool unreliable = bolt_connection_unreliable(connection);
	uint32_t immediate = bolt_rendezvous_immediate(connection, transmit->request_id,
						       transmit->op == BOLT_WIRE_READ_RESPONSE);
	struct ibv_send_wr write = { .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE };
	struct bolt_control_buffer *record;
	struct bolt_wire_header *header;
	size_t offset, length;
	struct ibv_sge sge;
	int keys;

	/* Which of the flushed ones landed, the target says first: the others wait for that. */
	if (transmit->uncertain_rails) {
		bolt_failover_ask_key(connection, transmit);
		return transmit->key_asked;
	}
	if (!bolt_link_can_send(connection, 0, unreliable ? 1 : 2) ||
	    !(record = bolt_control_buffer_get(domain)))
		return false;
	keys = bolt_failover_control_keys(connection, transmit, &sge.lkey, &write.wr.rdma.rkey);
	if (keys) {
		bolt_control_buffer_put(domain, record);
		if (keys < 0)
			bolt_connection_fail(connection, FI_EIO,
					     "a moved stripe's buffer cannot be registered on the control rail's port");
		/* Waiting for the target's key: the others may go meanwhile; else for room, or a move. */
		return keys < 0 || transmit->key_asked;
	}
	bolt_failover_stripe_range(transmit, rail, &offset, &length);
	sge.addr = (uintptr_t) transmit->iov[0].iov_base + offset;
	sge.length = (uint32_t) length;
	write.sg_list = &sge;
	write.wr.rdma.remote_addr = transmit->target_address + offset;
	record->operation = transmit;
	record->send_slots = unreliable ? 1 : 2;
	transmit->moved_rails &= ~(1u << rail);
	transmit->in_flight++;
	bolt_peer_of(connection)->stripes_moved++;
	if (unreliable) {
		write.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		write.imm_data = immediate;
		if (!bolt_link_post(connection, record, &write, NULL, bolt_transmit_send_completed))
			return true;    /* the link failed, and every transmit with it */
		connection->stripes_sent++;
		return true;
	}
	header = (struct bolt_wire_header *) bolt_control_buffer_data(domain, record);
	bolt_link_frame(connection, header, BOLT_WIRE_STRIPE_MOVED, 0);
	header->request_id = transmit->request_id;
	header->cq_data = immediate;
	header->tag = (uint64_t) rail;
	header->flags |= BOLT_WIRE_FLAG_LAST;
	bolt_link_post_buffer(connection, record, sizeof(*header), &write, bolt_transmit_send_completed);
	return true;
}

bool bolt_failover_progress(struct bolt_connection *connection)
{
	struct bolt_transmit *transmit, *next;

	DL_FOREACH_SAFE(bolt_peer_of(connection)->posted, transmit, next)
		for (int rail = 0; transmit->moved_rails && rail < BOLT_MAX_CONNECTION_RAILS; rail++) {
			if (!(transmit->moved_rails & (1u << rail)))
				continue;
			if (!bolt_failover_post(connection, transmit, rail))
				return false;
			if (connection->state == BOLT_CONNECTION_FAILED)
				return false;
		}
	return true;
}

/* The write that asked for the key header gives: a moved stripe's (posted) or a whole one's (not yet). */
static struct bolt_transmit *bolt_failover_key_asker(struct bolt_transmit *list,
						     const struct bolt_wire_header *header)
{
	struct bolt_transmit *transmit;

	DL_FOREACH(list, transmit)
		if (transmit->key_asked && transmit->request_id == header->request_id &&
		    bolt_failover_ask_kind(transmit) == (header->flags & BOLT_WIRE_KEY_ASK_KIND))
			return transmit;
	return NULL;
}

void bolt_failover_key_arrived(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_transmit *transmit = bolt_failover_key_asker(bolt_peer_of(connection)->posted, header);

	if (!transmit)
		transmit = bolt_failover_key_asker(bolt_peer_of(connection)->transmits, header);
	if (header->key > UINT32_MAX) {
		bolt_connection_fail(connection, FI_EIO, "a stripe key that is no key");
		return;
	}
	/* Late: the segments that asked had arrived after all, and their transfer completed. */
	if (!transmit)
		return;
	transmit->key_asked = false;
	/* Every byte landed, the flushed stripes too, and it completed there: none goes again. */
	if (header->cq_data == FI_EALREADY) {
		FI_INFO(&bolt_prov, FI_LOG_EP_DATA, "transfer %llu had landed whole: nothing written again\n",
			(unsigned long long) transmit->request_id);
		transmit->landed_at_target = true;
		transmit->moved_rails = 0;
		transmit->uncertain_rails = 0;
		bolt_transmit_check_done(transmit);
		return;
	}
	if (header->cq_data) {
		bolt_connection_fail(connection, FI_EIO,
				     "the target has no key on the control rail's port for a moved write's buffer");
		return;
	}
	transmit->target_rkey = (uint32_t) header->key;
	/* The link moved on again meanwhile: asked again. */
	transmit->target_port = bolt_rendezvous_key_port(connection, header);
	/* Those asked about that landed go no more; any flushed since, the next ask. */
	if (header->tag & transmit->asked_rails)
		FI_INFO(&bolt_prov, FI_LOG_EP_DATA,
			"transfer %llu: the stripes of rails 0x%llx had landed: not written again\n",
			(unsigned long long) transmit->request_id,
			(unsigned long long) (header->tag & transmit->asked_rails));
	transmit->moved_rails &= ~(header->tag & transmit->asked_rails);
	transmit->uncertain_rails &= ~transmit->asked_rails;
	transmit->asked_rails = 0;
	bolt_transmit_check_done(transmit);
	bolt_transmit_progress(connection);
}

bool bolt_failover_stripe_failed(struct bolt_control_buffer *record, const struct ibv_wc *wc)
{
	struct bolt_connection *connection = record->connection;
	struct bolt_transmit *transmit = record->operation;
	int rail = record->data_rail;

	if (rail < 0 || wc->status == IBV_WC_SUCCESS || !transmit ||
	    connection->state != BOLT_CONNECTION_ESTABLISHED)
		return false;
	bolt_control_buffer_put(connection->manager->domain, record);
	bolt_data_rail_fail(connection, rail,
			    connection->manager->domain->fabric->verbs.wc_status_str(wc->status));
	transmit->in_flight--;
	/* Unless the target said every byte landed: then this one had too. */
	if (!transmit->landed_at_target) {
		transmit->moved_rails |= 1u << rail;
		if (!bolt_connection_unreliable(connection))
			transmit->uncertain_rails |= 1u << rail;
	}
	/* After the stripe is marked moved: the last one back may make the rail again. */
	bolt_data_rail_send_returned(connection, rail);
	bolt_transmit_check_done(transmit);
	bolt_transmit_progress(connection);
	return true;
}
