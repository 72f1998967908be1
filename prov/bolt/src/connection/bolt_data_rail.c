/*
 * bolt_data_rail.c: a connection's data rails. Each is a queue pair of its
 * own to the peer, for the stripes of large writes, so that bulk data never
 * waits in front of the control rail's headers. The first rendezvous asks
 * for them over the control rail (its queue pair number and PSN); the peer
 * connects one of its own and answers. Both may ask at once: the end whose
 * address is lower keeps its request, the other answers it with the queue
 * pair it had made. A rail is only made while its port has a queue pair to
 * spare beyond the next connection's: rails speed transfers up, a
 * connection to one more peer is what the application asked for.
 *
 * Rails 0 to BOLT_MAX_DATA_RAILS - 1 are on the ports of the connection's
 * link, which reach each other: the domains' own, or the pair a probe found
 * (bolt_connection.c). Rail BOLT_MAX_DATA_RAILS + k is a stripe rail, on the
 * asker's k-th port other than its link's; which of the peer's ports that
 * one reaches (its cable's far end, on a mesh of cables) nothing in verbs
 * says. So the asker tries the peer's ports other than its link's in turn:
 * the peer connects a queue pair on the one named and posts a receive; the asker sends a probe carrying the
 * nonce of the attempt, then says so on the control rail (PROBE_SENT). If
 * the probe arrives, the peer says PROBED and the asker READY, and both use
 * the rail from then on. If it has not arrived FI_BOLT_RAIL_PROBE_TIMEOUT
 * after PROBE_SENT, the peer says PROBED with FI_ETIMEDOUT and the asker
 * tries the next port; once the peer has no more, the rail is unavailable.
 * The peer judges, and only from PROBE_SENT on, after looking at its CQs:
 * so neither end's pause in progress can pass for a port out of reach.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "bolt_random.h"
#include "connection/bolt_connection.h"
#include "rails/bolt_qp.h"

#define BOLT_DATA_RAIL_NS_PER_MS 1000000ULL

static bool bolt_data_rail_is_stripe(uint64_t index)
{
	return index >= BOLT_MAX_DATA_RAILS;
}

static bool bolt_data_rail_we_win(const struct bolt_connection *connection)
{
	return memcmp(&connection->peer, &connection->manager->address, sizeof(connection->peer)) > 0;
}

/*
 * This end's port of rail index: its link's for a data rail, the stripe
 * rail's other port for a stripe rail (stripe, counted from 0, is what the
 * peer names); NULL if there is no such port.
 */
static struct bolt_rail_port *bolt_data_rail_port(struct bolt_connection *connection,
						  uint64_t index, uint64_t stripe)
{
	struct bolt_domain *domain = connection->manager->domain;
	int link_port = bolt_connection_port_index(connection);

	if (!bolt_data_rail_is_stripe(index))
		return index < (uint64_t) domain->data_rails ?
		       bolt_link_port_of_index(domain, link_port) : NULL;
	return bolt_link_other_port(domain, link_port, stripe);
}

/* Another domain's own port: its queue pairs are for that domain's connections. */
static bool bolt_data_rail_port_taken(const struct bolt_connection *connection, uint64_t index,
				      const struct bolt_rail_port *port)
{
	return bolt_data_rail_is_stripe(index) && port != &connection->manager->domain->primary &&
	       bolt_rail_port_claimed(port);
}

/* Our queue pair for rail on port, in INIT; false when none can be spared. */
static bool bolt_data_rail_create_qp(struct bolt_connection *connection, struct bolt_data_rail *rail,
				     struct bolt_rail_port *port)
{
	struct bolt_verbs *verbs = &connection->manager->domain->fabric->verbs;
	/* A stripe rail's probe takes a send queue entry ahead of the stripes. */
	uint32_t depth = (uint32_t) port->budget.queue_depth + 1;

	if (!bolt_rail_port_has_qp(port, 1))
		return false;
	rail->qp = bolt_qp_create(verbs, port->handle.pd, port->handle.cq, port->qp_type, depth, 0);
	if (!rail->qp) {
		FI_INFO(&bolt_prov, FI_LOG_EP_CTRL, "%s has no queue pair for a data rail (%s)\n",
			port->device.name, strerror(errno));
		return false;
	}
	port->qp_count++;
	rail->port = port;
	rail->psn = bolt_random_u32() & 0xffffff;
	if (bolt_qp_init(verbs, rail->qp, port->qp_local.port_num)) {
		verbs->destroy_qp(rail->qp);
		rail->qp = NULL;
		port->qp_count--;
		return false;
	}
	return true;
}

/*
 * Its completions name no queue pair once it is gone, so a rail with sends
 * out is destroyed only when its connection fails or closes, which ends
 * its operations and reclaims their records; every other caller either
 * waits for them (bolt_data_rail_send_returned) or acts on a rail not yet
 * READY, which carries none.
 */
void bolt_data_rail_destroy(struct bolt_connection *connection, struct bolt_data_rail *rail)
{
	if (rail->qp) {
		connection->manager->domain->fabric->verbs.destroy_qp(rail->qp);
		rail->qp = NULL;
		rail->port->qp_count--;
	}
	rail->failed = false;
	rail->revive_when_drained = false;
	rail->request_when_drained = false;
}

/* RTR and RTS towards the peer's queue pair for the rail, at gid. */
static int bolt_data_rail_connect(struct bolt_connection *connection, struct bolt_data_rail *rail,
				  const struct bolt_wire_header *header, const union ibv_gid *gid)
{
	struct bolt_qp_local local = rail->port->qp_local;
	struct bolt_qp_remote remote = {
		.qpn = (uint32_t) header->address,
		.psn = (uint32_t) header->key,
		.gid = *gid,
	};

	local.psn = rail->psn;
	return bolt_qp_connect(&connection->manager->domain->fabric->verbs, rail->qp, &local, &remote);
}

/*
 * A message about rail number index: a request or answer (status refuses),
 * with our queue pair and, on a stripe rail, our port's GID; or PROBED, READY.
 */
void bolt_data_rail_send(struct bolt_connection *connection, enum bolt_wire_op op,
				uint64_t index, uint32_t status)
{
	struct bolt_data_rail *rail = &connection->data_rails[index];
	/* request_id names the rail, cq_data holds the status. */
	struct bolt_wire_header header = { .op = (uint8_t) op, .request_id = index, .cq_data = status };
	bool carries_qp = op == BOLT_WIRE_RAIL_REQUEST || op == BOLT_WIRE_RAIL_ANSWER;
	size_t payload_length = 0;

	if (carries_qp && !status) {
		header.address = rail->qp->qp_num;
		header.key = rail->psn;
	}
	if (bolt_data_rail_is_stripe(index)) {
		header.tag = op == BOLT_WIRE_RAIL_REQUEST ? (uint64_t) rail->candidate + 1 :
			     rail->probe_nonce;
		if (carries_qp && !status)
			payload_length = sizeof(rail->port->gid.raw);
	}
	/* Queued behind what the connection sends already, as the peer must see it. */
	connection->manager->events->send(connection, &header, rail->port ? rail->port->gid.raw : NULL,
					  payload_length);
}

/* Asks for rail index on port: makes our queue pair, sends the request. */
static void bolt_data_rail_ask(struct bolt_connection *connection, uint64_t index,
			       struct bolt_rail_port *port)
{
	struct bolt_data_rail *rail = &connection->data_rails[index];

	if (!bolt_data_rail_create_qp(connection, rail, port)) {
		rail->state = BOLT_DATA_RAIL_UNAVAILABLE;
		return;
	}
	rail->state = BOLT_DATA_RAIL_REQUESTED;
	bolt_data_rail_send(connection, BOLT_WIRE_RAIL_REQUEST, index, 0);
}

void bolt_data_rail_request(struct bolt_connection *connection)
{
	if (connection->loopback || connection->state == BOLT_CONNECTION_FAILED)
		return;
	/*
	 * A rail's port is chosen from the link's, and the peer answers from
	 * its own link's port when the request arrives: while the link moves,
	 * the request would go after the move from a queue pair on the port
	 * left. The next large transfer asks (bolt_transmit_choose_protocol).
	 */
	if (connection->link && connection->link->successor)
		return;
	for (uint64_t index = 0; index < BOLT_MAX_CONNECTION_RAILS; index++) {
		struct bolt_data_rail *rail = &connection->data_rails[index];
		/* Our stripe rail k is on our k-th other port. */
		uint64_t stripe = bolt_data_rail_is_stripe(index) ? index - BOLT_MAX_DATA_RAILS : 0;
		struct bolt_rail_port *port = bolt_data_rail_port(connection, index, stripe);

		if (rail->state != BOLT_DATA_RAIL_NONE || !port)
			continue;
		if (bolt_data_rail_port_taken(connection, index, port)) {
			rail->state = BOLT_DATA_RAIL_UNAVAILABLE;
			continue;
		}
		rail->candidate = 0;
		bolt_data_rail_ask(connection, index, port);
	}
}

void bolt_data_rail_link_moved(struct bolt_connection *connection)
{
	bool asked = false;

	/* Nothing goes out before the link is known: the peer saw none of those requests. */
	for (int index = 0; index < BOLT_MAX_CONNECTION_RAILS; index++) {
		struct bolt_data_rail *rail = &connection->data_rails[index];

		asked |= rail->state != BOLT_DATA_RAIL_NONE;
		bolt_data_rail_destroy(connection, rail);
		rail->state = BOLT_DATA_RAIL_NONE;
	}
	if (asked)
		bolt_data_rail_request(connection);
}

/* Asker: the attempt failed; the peer's next port, with a new queue pair. */
static void bolt_data_rail_try_next(struct bolt_connection *connection, uint64_t index)
{
	struct bolt_data_rail *rail = &connection->data_rails[index];
	struct bolt_rail_port *port = rail->port;

	bolt_data_rail_destroy(connection, rail);
	rail->candidate++;
	bolt_data_rail_ask(connection, index, port);
}

/* Why a rail message cannot be used, or NULL. */
const char *bolt_data_rail_check(const struct bolt_wire_header *header, bool carries_qp)
{
	bool stripe = bolt_data_rail_is_stripe(header->request_id);

	if (header->request_id >= BOLT_MAX_CONNECTION_RAILS)
		return "data rail number out of range";
	if (!stripe && header->tag)
		return "a data rail of the link's ports naming another port";
	if (!carries_qp || header->cq_data)
		return NULL;
	if (header->address == 0 || header->address > 0xffffff || header->key > 0xffffff)
		return "data rail queue pair number or PSN out of range";
	if (stripe && header->payload_length != sizeof(union ibv_gid))
		return "a stripe rail message without its port's GID";
	return NULL;
}

/* The GID a rail message names: the payload's on a stripe rail, else the link's peer's. */
static union ibv_gid bolt_data_rail_peer_gid(const struct bolt_connection *connection,
					     const struct bolt_wire_header *header, const char *payload)
{
	union ibv_gid gid = connection->link->peer_gid;

	if (bolt_data_rail_is_stripe(header->request_id))
		memcpy(gid.raw, payload, sizeof(gid.raw));
	return gid;
}

/* Answerer: the port a request names, or NULL (none such: the asker has tried them all). */
static struct bolt_rail_port *bolt_data_rail_answer_port(struct bolt_connection *connection,
							 const struct bolt_wire_header *header)
{
	bool stripe = bolt_data_rail_is_stripe(header->request_id);

	/* A stripe rail's request names our port other than the link's, from 1. */
	if (stripe && header->tag < 1)
		return NULL;
	return bolt_data_rail_port(connection, header->request_id, stripe ? header->tag - 1 : 0);
}

/* Answerer, stripe rail: a receive for the probe, and the nonce it must carry. */
static int bolt_data_rail_await_probe(struct bolt_connection *connection, struct bolt_data_rail *rail)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t) &domain->rail_probe };
	struct ibv_recv_wr *bad_wr;

	do
		rail->probe_nonce = bolt_random_u32();
	while (!rail->probe_nonce);
	rail->probe_deadline_ns = 0;    /* set by the asker's PROBE_SENT */
	return domain->fabric->verbs.post_recv(rail->qp, &wr, &bad_wr);
}

static void bolt_data_rail_requested(struct bolt_connection *connection, const struct bolt_wire_header *header,
			      const char *payload)
{
	const char *problem = bolt_data_rail_check(header, true);
	struct bolt_rail_port *port;
	struct bolt_data_rail *rail;
	union ibv_gid gid;

	if (!problem && header->cq_data)
		problem = "a data rail request without a queue pair";
	if (problem) {
		bolt_connection_fail(connection, FI_EIO, problem);
		return;
	}
	rail = &connection->data_rails[header->request_id];
	if (rail->state == BOLT_DATA_RAIL_REQUESTED && bolt_data_rail_we_win(connection))
		return;         /* both asked at once: the peer answers ours */
	/* The peer lost it (its cable or port failed and came back) and makes it anew: so do we. */
	if (rail->state == BOLT_DATA_RAIL_READY || rail->state == BOLT_DATA_RAIL_PROBING) {
		bolt_data_rail_mark_failed(connection, (int) header->request_id, "the peer makes it again");
		if (bolt_data_rail_request_waits(connection, (int) header->request_id, header, payload))
			return;
		bolt_data_rail_destroy(connection, rail);
	}
	/* A stripe rail's earlier attempt, or our own request the peer's overrides. */
	port = bolt_data_rail_answer_port(connection, header);
	if (rail->qp && (rail->port != port || bolt_data_rail_is_stripe(header->request_id)))
		bolt_data_rail_destroy(connection, rail);
	gid = bolt_data_rail_peer_gid(connection, header, payload);
	if (!port || bolt_data_rail_port_taken(connection, header->request_id, port) ||
	    (!rail->qp && !bolt_data_rail_create_qp(connection, rail, port)) ||
	    bolt_data_rail_connect(connection, rail, header, &gid) ||
	    (bolt_data_rail_is_stripe(header->request_id) &&
	     bolt_data_rail_await_probe(connection, rail))) {
		bolt_data_rail_destroy(connection, rail);
		rail->state = BOLT_DATA_RAIL_UNAVAILABLE;
		bolt_data_rail_send(connection, BOLT_WIRE_RAIL_ANSWER, header->request_id,
				    port ? FI_ENOSPC : FI_ENODEV);
		return;
	}
	rail->state = bolt_data_rail_is_stripe(header->request_id) ? BOLT_DATA_RAIL_AWAITING_PROBE :
		      BOLT_DATA_RAIL_READY;
	bolt_data_rail_send(connection, BOLT_WIRE_RAIL_ANSWER, header->request_id, 0);
}

/* Asker, stripe rail: the probe, a SEND of no bytes whose immediate data is the nonce. */
static int bolt_data_rail_probe(struct bolt_connection *connection, struct bolt_data_rail *rail)
{
	struct bolt_domain *domain = connection->manager->domain;
	struct ibv_send_wr wr = {
		.wr_id = (uintptr_t) &domain->rail_probe,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = rail->probe_nonce,
	};
	struct ibv_send_wr *bad_wr;

	return domain->fabric->verbs.post_send(rail->qp, &wr, &bad_wr);
}

static void bolt_data_rail_answered(struct bolt_connection *connection, const struct bolt_wire_header *header,
			     const char *payload)
{
	const char *problem = bolt_data_rail_check(header, true);
	bool stripe = bolt_data_rail_is_stripe(header->request_id);
	struct bolt_data_rail *rail;
	union ibv_gid gid;

	if (!problem && connection->data_rails[header->request_id].state != BOLT_DATA_RAIL_REQUESTED)
		problem = "an answer for a data rail never asked for";
	if (problem) {
		bolt_connection_fail(connection, FI_EIO, problem);
		return;
	}
	rail = &connection->data_rails[header->request_id];
	/* The peer could not use the port named (FI_ENODEV: it has no more): its next. */
	if (stripe && header->cq_data && header->cq_data != FI_ENODEV) {
		bolt_data_rail_try_next(connection, header->request_id);
		return;
	}
	if (!header->cq_data) {
		gid = bolt_data_rail_peer_gid(connection, header, payload);
		if (stripe && header->tag && header->tag <= UINT32_MAX) {
			rail->probe_nonce = (uint32_t) header->tag;
			if (!bolt_data_rail_connect(connection, rail, header, &gid) &&
			    !bolt_data_rail_probe(connection, rail)) {
				rail->state = BOLT_DATA_RAIL_PROBING;
				bolt_data_rail_send(connection, BOLT_WIRE_RAIL_PROBE_SENT,
						    header->request_id, 0);
				return;
			}
		} else if (!stripe && !bolt_data_rail_connect(connection, rail, header, &gid)) {
			rail->state = BOLT_DATA_RAIL_READY;
			return;
		}
	}
	if (stripe)
		FI_INFO(&bolt_prov, FI_LOG_EP_CTRL,
			"stripe rail %u: no port of the peer's took its probe; %s:%u carries no stripes to it\n",
			(unsigned int) header->request_id, rail->port->device.name,
			rail->port->port.port_num);
	else
		FI_INFO(&bolt_prov, FI_LOG_EP_CTRL,
			"data rail %u: the peer has none (%s); the control rail carries large writes\n",
			(unsigned int) header->request_id, fi_strerror((int) header->cq_data));
	bolt_data_rail_destroy(connection, rail);
	rail->state = BOLT_DATA_RAIL_UNAVAILABLE;
}

/* Answerer: the stripe rail of the connections of domain waiting for the probe wc brought. */
static void bolt_data_rail_probe_arrived(struct bolt_domain *domain, const struct ibv_wc *wc)
{
	struct bolt_connection_manager *manager;

	DL_FOREACH(domain->connection_managers, manager) {
		struct bolt_connection *connection, *next;

		HASH_ITER(hh, manager->connections, connection, next)
			for (int index = BOLT_MAX_DATA_RAILS; index < BOLT_MAX_CONNECTION_RAILS; index++) {
				struct bolt_data_rail *rail = &connection->data_rails[index];

				if (rail->state != BOLT_DATA_RAIL_AWAITING_PROBE ||
				    rail->qp->qp_num != wc->qp_num || rail->probe_nonce != wc->imm_data)
					continue;
				rail->state = BOLT_DATA_RAIL_PROBED;
				bolt_data_rail_send(connection, BOLT_WIRE_RAIL_PROBED, (uint64_t) index, 0);
				return;
			}
	}
}

/*
 * Probes and their receives carry no record: an attempt may be given up
 * (its queue pair destroyed) with a completion of it still in the CQ. What
 * comes is matched to a rail waiting for it, by queue pair and nonce. Sends,
 * and probes that failed to reach (RC), need nothing: the peer judges a
 * probe that does not come.
 */
static void bolt_data_rail_probe_completed(struct bolt_work_completion *work, const struct ibv_wc *wc)
{
	struct bolt_domain *domain = bolt_container_of(work, struct bolt_domain, rail_probe);

	if (wc->status == IBV_WC_SUCCESS && (wc->opcode & IBV_WC_RECV) &&
	    (wc->wc_flags & IBV_WC_WITH_IMM))
		bolt_data_rail_probe_arrived(domain, wc);
}

void bolt_data_rail_domain_init(struct bolt_domain *domain)
{
	domain->rail_probe.handle = bolt_data_rail_probe_completed;
}

/* The stripe rail a PROBED, PROBE_SENT or READY names; NULL, the connection failed, if none. */
static struct bolt_data_rail *bolt_data_rail_probe_subject(struct bolt_connection *connection,
							   const struct bolt_wire_header *header)
{
	const char *problem = bolt_data_rail_check(header, false);

	if (!problem && !bolt_data_rail_is_stripe(header->request_id))
		problem = "a probe message for a data rail of the link's ports";
	if (problem) {
		bolt_connection_fail(connection, FI_EIO, problem);
		return NULL;
	}
	return &connection->data_rails[header->request_id];
}

static void bolt_data_rail_probed(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_data_rail *rail = bolt_data_rail_probe_subject(connection, header);

	if (!rail)
		return;
	if (rail->state != BOLT_DATA_RAIL_PROBING || rail->probe_nonce != header->tag) {
		bolt_connection_fail(connection, FI_EIO, "a probe answer for no probe");
		return;
	}
	/* The port named is not at the far end of our cable: the peer's next one. */
	if (header->cq_data) {
		bolt_data_rail_try_next(connection, header->request_id);
		return;
	}
	rail->state = BOLT_DATA_RAIL_READY;
	bolt_data_rail_send(connection, BOLT_WIRE_RAIL_READY, header->request_id, 0);
}

static void bolt_data_rail_probe_sent(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_data_rail *rail = bolt_data_rail_probe_subject(connection, header);

	/* The probe came first (PROBED is on its way), or the nonce is another attempt's. */
	if (!rail || rail->state != BOLT_DATA_RAIL_AWAITING_PROBE || rail->probe_nonce != header->tag)
		return;
	rail->probe_deadline_ns = bolt_connection_now_ns() +
				  (uint64_t) connection->manager->domain->fabric->params.rail_probe_timeout *
				  BOLT_DATA_RAIL_NS_PER_MS;
}

static void bolt_data_rail_peer_ready(struct bolt_connection *connection, const struct bolt_wire_header *header)
{
	struct bolt_data_rail *rail = bolt_data_rail_probe_subject(connection, header);

	if (!rail)
		return;
	if (rail->state != BOLT_DATA_RAIL_PROBED || rail->probe_nonce != header->tag) {
		bolt_connection_fail(connection, FI_EIO, "a data rail made ready that was not probed");
		return;
	}
	rail->state = BOLT_DATA_RAIL_READY;
}

void bolt_data_rail_check_probes(struct bolt_connection *connection, uint64_t now_ns)
{
	for (int index = BOLT_MAX_DATA_RAILS; index < BOLT_MAX_CONNECTION_RAILS; index++) {
		struct bolt_data_rail *rail = &connection->data_rails[index];

		if (connection->state != BOLT_CONNECTION_ESTABLISHED)
			return;
		/* Called after the CQs were polled: a probe that came has been seen. */
		if (rail->state != BOLT_DATA_RAIL_AWAITING_PROBE || !rail->probe_deadline_ns ||
		    now_ns <= rail->probe_deadline_ns)
			continue;
		bolt_data_rail_destroy(connection, rail);
		rail->state = BOLT_DATA_RAIL_UNAVAILABLE;
		bolt_data_rail_send(connection, BOLT_WIRE_RAIL_PROBED, (uint64_t) index, FI_ETIMEDOUT);
	}
}

uint32_t bolt_data_rail_ready(const struct bolt_connection *connection, bool with_room)
{
	uint32_t mask = 0;

	for (int index = 0; index < BOLT_MAX_CONNECTION_RAILS; index++) {
		const struct bolt_data_rail *rail = &connection->data_rails[index];

		if (rail->state == BOLT_DATA_RAIL_READY &&
		    (!with_room || rail->outstanding_sends < rail->port->budget.queue_depth))
			mask |= 1u << index;
	}
	return mask;
}

bool bolt_data_rail_striping(const struct bolt_connection *connection)
{
	/* The rails from BOLT_MAX_DATA_RAILS on are on ports other than the link's. */
	return bolt_data_rail_usable(connection, false) >> BOLT_MAX_DATA_RAILS;
}

int bolt_data_rail_post(struct bolt_connection *connection, int index, struct bolt_control_buffer *record,
			struct ibv_send_wr *wr)
{
	struct bolt_data_rail *rail = &connection->data_rails[index];
	struct ibv_send_wr *bad_wr;
	int ret;

	wr->wr_id = (uintptr_t) &record->work;
	wr->send_flags = IBV_SEND_SIGNALED;
	record->connection = connection;
	record->link = NULL;
	record->data_rail = index;
	record->posted = true;
	ret = connection->manager->domain->fabric->verbs.post_send(rail->qp, wr, &bad_wr);
	if (ret) {
		record->posted = false;
		return ret;
	}
	rail->outstanding_sends++;
	rail->bytes_written += wr->sg_list[0].length;
	return 0;
}

int bolt_data_rail_post_write(struct bolt_connection *connection, int index,
			      struct bolt_control_buffer *record, const struct ibv_sge *sge,
			      uint64_t remote_address, uint32_t rkey, uint32_t immediate)
{
	struct ibv_send_wr wr = {
		.sg_list = (struct ibv_sge *) sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = immediate,
		.wr.rdma = { .remote_addr = remote_address, .rkey = rkey },
	};
	int ret = bolt_rewrite_applies(connection) ?
		  bolt_rewrite_start(connection, index, record, sge, remote_address, rkey, &immediate) :
		  bolt_data_rail_post(connection, index, record, &wr);

	if (ret)
		return ret < 0 ? -ret : ret;
	connection->stripes_sent++;
	return 0;
}

int bolt_data_rail_post_receive(struct bolt_connection *connection, int index,
				struct bolt_control_buffer *record)
{
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t) &record->work };
	struct ibv_recv_wr *bad_wr;
	int ret;

	record->connection = connection;
	record->data_rail = index;
	record->posted = true;
	ret = connection->manager->domain->fabric->verbs.post_recv(connection->data_rails[index].qp,
								     &wr, &bad_wr);
	if (ret)
		record->posted = false;
	return ret;
}

void bolt_data_rail_destroy_all(struct bolt_connection *connection)
{
	for (int index = 0; index < BOLT_MAX_CONNECTION_RAILS; index++)
		bolt_data_rail_destroy(connection, &connection->data_rails[index]);
}

void bolt_data_rail_message(struct bolt_connection *connection, const struct bolt_wire_header *header,
			    const char *payload)
{
	switch (header->op) {
	case BOLT_WIRE_RAIL_REQUEST:
		bolt_data_rail_requested(connection, header, payload);
		break;
	case BOLT_WIRE_RAIL_ANSWER:
		bolt_data_rail_answered(connection, header, payload);
		break;
	case BOLT_WIRE_RAIL_PROBED:
		bolt_data_rail_probed(connection, header);
		break;
	case BOLT_WIRE_RAIL_READY:
		bolt_data_rail_peer_ready(connection, header);
		break;
	case BOLT_WIRE_RAIL_PROBE_SENT:
		bolt_data_rail_probe_sent(connection, header);
		break;
	case BOLT_WIRE_RAIL_STATE:
		bolt_data_rail_peer_state(connection, header);
		break;
	}
}
