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

/*
 * The keys for a stripe on the control rail: those of a rail of the transfer
 * on the control rail's port, which the target registered there whenever it
 * answered; else those the answer gave for the control rail, unless it moved
 * to another port since (connection/bolt_link_move.c). False if none.
 */
static bool bolt_failover_keys(struct bolt_connection *connection, struct bolt_transmit *transmit,
			       uint32_t *lkey, uint32_t *rkey)
{
	struct ibv_mr *mr = NULL;

	for (int rail = 0; !mr && rail < BOLT_MAX_CONNECTION_RAILS; rail++)
		if ((transmit->rail_mask & (1u << rail)) &&
		    connection->data_rails[rail].port == connection->link->port) {
			mr = bolt_registration_rail_mr(connection, rail, &transmit->registration,
						       transmit->iov[0].iov_base, transmit->target_length);
			*rkey = transmit->rail_rkeys[rail];
		}
	if (!mr && (!transmit->target_port || transmit->target_port == connection->link->port)) {
		mr = bolt_registration_link_mr(connection, &transmit->registration);
		*rkey = transmit->target_rkey;
	}
	if (mr)
		*lkey = mr->lkey;
	return mr != NULL;
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

	if (!bolt_link_can_send(connection, 0, unreliable ? 1 : 2) ||
	    !(record = bolt_control_buffer_get(domain)))
		return false;
	if (!bolt_failover_keys(connection, transmit, &sge.lkey, &write.wr.rdma.rkey)) {
		bolt_control_buffer_put(domain, record);
		bolt_connection_fail(connection, FI_EIO, "a stripe has no keys on the moved control rail");
		return true;
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
	transmit->moved_rails |= 1u << rail;
	/* After the stripe is marked moved: the last one back may make the rail again. */
	bolt_data_rail_send_returned(connection, rail);
	bolt_transmit_progress(connection);
	return true;
}
