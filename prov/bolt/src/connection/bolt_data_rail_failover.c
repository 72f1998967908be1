/*
 * bolt_data_rail_failover.c: which of a connection's data rails may carry
 * stripes now (bolt_data_rail_usable), and how that changes. A rail fails
 * when its port's asynchronous event says the port went down (a cut cable
 * takes both ends' ports down, a port down only its own), when a stripe
 * posted on it completes with an error (RC: retry exceeded, or flushed), or
 * when the peer says it failed at its end (RAIL_STATE), since a port down
 * at one end raises no event at the other. An RC rail that fails goes to
 * ERR at once, so that what was posted on it comes back flushed and goes on
 * the control rail (protocol/bolt_failover.c) instead of after the retries.
 * When the port comes back (PORT_ACTIVE), a UC rail is used again as it is
 * (its queue pair never left RTS) and the peer is told; an RC one is made
 * again, asked for and probed as the first time.
 */
#include <string.h>
#include <utlist.h>

#include "connection/bolt_link_move.h"
#include "rails/bolt_qp.h"

/* Whether rail may take a stripe now: ready, its port up, none of its writes failed. */
static bool bolt_data_rail_is_usable(const struct bolt_data_rail *rail)
{
	return rail->state == BOLT_DATA_RAIL_READY && !rail->failed && !rail->port->down;
}

bool bolt_data_rail_index_usable(const struct bolt_connection *connection, int index)
{
	return bolt_data_rail_is_usable(&connection->data_rails[index]);
}

uint32_t bolt_data_rail_usable(const struct bolt_connection *connection, bool with_room)
{
	uint32_t mask = 0;

	for (int index = 0; index < BOLT_MAX_CONNECTION_RAILS; index++) {
		const struct bolt_data_rail *rail = &connection->data_rails[index];

		if (bolt_data_rail_is_usable(rail) &&
		    (!with_room || rail->outstanding_sends < rail->port->budget.queue_depth))
			mask |= 1u << index;
	}
	return mask;
}

bool bolt_data_rail_mark_failed(struct bolt_connection *connection, int index, const char *why)
{
	struct bolt_data_rail *rail = &connection->data_rails[index];

	if (rail->failed || rail->state != BOLT_DATA_RAIL_READY)
		return false;
	rail->failed = true;
	FI_WARN(&bolt_prov, FI_LOG_EP_DATA, "data rail %d on %s:%u failed (%s): its stripes go elsewhere\n",
		index, rail->port->device.name, rail->port->port.port_num, why);
	/*
	 * RC: what is posted on it completes now, flushed, and is posted again
	 * on what remains, instead of after the retries run out. UC loses
	 * silently what the cable dropped; the queue pair itself stays usable.
	 */
	if (rail->port->qp_type == IBV_QPT_RC)
		bolt_qp_error(&connection->manager->domain->fabric->verbs, rail->qp);
	return true;
}

void bolt_data_rail_fail(struct bolt_connection *connection, int index, const char *why)
{
	/* The peer may not see the failure (our port alone went down): it offers no stripes on it. */
	if (bolt_data_rail_mark_failed(connection, index, why))
		bolt_data_rail_send(connection, BOLT_WIRE_RAIL_STATE, (uint64_t) index, FI_EHOSTUNREACH);
}

/*
 * The port of a failed rail is back: a UC rail is used again as it is. An RC
 * one went to ERR: it is made again, asked for and probed as the first time.
 */
static void bolt_data_rail_revive(struct bolt_connection *connection, int index)
{
	struct bolt_data_rail *rail = &connection->data_rails[index];

	if (!rail->failed)
		return;
	FI_INFO(&bolt_prov, FI_LOG_EP_DATA, "data rail %d on %s:%u: its port is back\n", index,
		rail->port->device.name, rail->port->port.port_num);
	if (rail->port->qp_type != IBV_QPT_RC) {
		rail->failed = false;
		bolt_data_rail_send(connection, BOLT_WIRE_RAIL_STATE, (uint64_t) index, 0);
		return;
	}
	/* Failed until its queue pair goes: no stripe on it meanwhile. */
	if (rail->outstanding_sends > 0) {
		rail->revive_when_drained = true;
		return;
	}
	/* Failed no more: the destroy clears it. */
	bolt_data_rail_destroy(connection, rail);
	rail->state = BOLT_DATA_RAIL_NONE;
	bolt_data_rail_request(connection);
}

bool bolt_data_rail_request_waits(struct bolt_connection *connection, int index,
				  const struct bolt_wire_header *header, const char *payload)
{
	struct bolt_data_rail *rail = &connection->data_rails[index];

	if (rail->port->qp_type != IBV_QPT_RC || rail->outstanding_sends <= 0)
		return false;
	FI_INFO(&bolt_prov, FI_LOG_EP_DATA,
		"data rail %d: the peer makes it again; %d sends still out come back first\n", index,
		rail->outstanding_sends);
	rail->request_when_drained = true;
	rail->drained_request = *header;
	memcpy(rail->drained_request_payload, payload,
	       header->payload_length < sizeof(rail->drained_request_payload) ?
	       header->payload_length : sizeof(rail->drained_request_payload));
	return true;
}

void bolt_data_rail_send_returned(struct bolt_connection *connection, int index)
{
	struct bolt_data_rail *rail = &connection->data_rails[index];
	struct bolt_wire_header request;

	if (--rail->outstanding_sends > 0 || connection->state != BOLT_CONNECTION_ESTABLISHED)
		return;
	if (rail->revive_when_drained) {
		rail->revive_when_drained = false;
		bolt_data_rail_revive(connection, index);
	}
	if (rail->request_when_drained) {
		rail->request_when_drained = false;
		request = rail->drained_request;
		bolt_data_rail_message(connection, &request, rail->drained_request_payload);
	}
}

/* The rails of connection on port fail, or are used again. */
static void bolt_data_rail_port_changed_one(struct bolt_connection *connection,
					    const struct bolt_rail_port *port)
{
	if (connection->state != BOLT_CONNECTION_ESTABLISHED)
		return;
	for (int index = 0; index < BOLT_MAX_CONNECTION_RAILS; index++) {
		if (connection->data_rails[index].port != port)
			continue;
		if (port->down)
			bolt_data_rail_fail(connection, index, "port down");
		else
			bolt_data_rail_revive(connection, index);
	}
}

/* port went down or came back: the rails on it of domain's connections fail, or are used again. */
static void bolt_data_rail_port_changed(struct bolt_domain *domain, const struct bolt_rail_port *port)
{
	struct bolt_connection_manager *manager;

	DL_FOREACH(domain->connection_managers, manager) {
		struct bolt_connection *connection, *next;

		HASH_ITER(hh, manager->connections, connection, next)
			bolt_data_rail_port_changed_one(connection, port);
	}
	/* The control rails on it move to another port. */
	bolt_link_move_port_changed(domain, port);
}

/* Usable again at the peer: a UC rail here too; an RC one that failed is made again by a new request. */
void bolt_data_rail_peer_state(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	const char *problem = bolt_data_rail_check(header, false);
	struct bolt_data_rail *rail;

	if (problem) {
		bolt_connection_fail(connection, FI_EIO, problem);
		return;
	}
	rail = &connection->data_rails[header->request_id];
	if (header->cq_data)
		bolt_data_rail_mark_failed(connection, (int) header->request_id, "failed at the peer");
	else if (rail->failed && rail->qp && rail->port->qp_type != IBV_QPT_RC && !rail->port->down)
		rail->failed = false;
}

void bolt_data_rail_watch_ports(struct bolt_domain *domain)
{
	domain->ports_watched_ns = bolt_connection_now_ns();
	if (bolt_rail_port_read_events(&domain->primary))
		bolt_data_rail_port_changed(domain, &domain->primary);
	for (int index = 0; index < domain->stripe_port_count; index++)
		if (bolt_rail_port_read_events(&domain->stripe_ports[index]))
			bolt_data_rail_port_changed(domain, &domain->stripe_ports[index]);
	bolt_link_move_progress(domain);
}

/* A stripe of a MiB takes about 100 us on a cable: a look at most every 20 us. */
#define BOLT_DATA_RAIL_WATCH_NS 20000ULL

void bolt_data_rail_watch_ports_soon(struct bolt_domain *domain)
{
	if (bolt_connection_now_ns() - domain->ports_watched_ns >= BOLT_DATA_RAIL_WATCH_NS)
		bolt_data_rail_watch_ports(domain);
}
